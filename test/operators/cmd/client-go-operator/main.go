// client-go-operator is an operator written on client-go alone, without a framework: a
// leaderelection.LeaderElector over a resourcelock.LeaseLock held as the pod's name (POD_NAME,
// else the hostname, which is the pod's name), ReleaseOnCancel left false as most users leave
// it, running the heartbeat while it leads. After its leader stops, standbys wait for the
// lease to expire (docs/design.md#the-problem); since the lease names the pod itself, it is
// one leaderhook's R1 counts as the pod's own (docs/design.md#leases-held-by-identity).
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leaderhook.io/test/operators/internal/opshell"
)

// The timings client-go's LeaderElectionConfig documents as the core clients' defaults
// (kube-controller-manager's and kube-scheduler's), which users of the LeaderElector
// usually copy; controller-runtime's defaults are the same.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

func main() {
	opshell.Main("client-go-operator", "client-go-operator-lock", run)
}

func run(op *opshell.Operator) error {
	log, opts, pod, ns, ctx, cfg := op.Log, op.Opts, op.Pod, op.Namespace, op.Ctx, op.Config
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the clientset of the Lease lock: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}
	lock := newLeaseLock(clientset, ns, opts.LockName, pod)
	hb := op.NewHeartbeat(c, lock.Identity())

	var led leading
	elector, err := leaderelection.NewLeaderElector(electionConfig(lock, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			if !led.start() {
				return
			}
			defer led.done()
			log.Info("became leader", "pod", pod, "namespace", ns, "lock", opts.LockName, "lockIdentity", lock.Identity())
			_ = hb.Run(ctx)
		},
		OnStoppedLeading: func() {},
		OnNewLeader: func(identity string) {
			log.Info("new leader observed", "identity", identity)
		},
	}))
	if err != nil {
		return fmt.Errorf("creating the leader elector: %w", err)
	}

	log.Info("trying", "pod", pod, "podUID", op.PodUID, "namespace", ns, "lock", opts.LockName, "lockIdentity", lock.Identity())
	elector.Run(ctx)
	// Run returns without waiting for OnStartedLeading, which it started in a goroutine: the
	// heartbeat must have stopped before this process says it stopped, or exits.
	wasLeader := led.stopAndWait()
	log.Info("stopped", "pod", pod, "leader", wasLeader)
	if ctx.Err() == nil {
		// The lease was lost while the operator still ran: as client-go's example and
		// controller-runtime do, end the process and let the kubelet restart it.
		return errors.New("leader election lost")
	}
	return nil
}

// newLeaseLock is the lock as client-go's leader-election example builds it, held as the
// pod's name.
func newLeaseLock(clientset kubernetes.Interface, namespace, name, identity string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
		Client:     clientset.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
}

func electionConfig(lock resourcelock.Interface, callbacks leaderelection.LeaderCallbacks) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: leaseDuration,
		RenewDeadline: renewDeadline,
		RetryPeriod:   retryPeriod,
		// Left false, as most users leave it: a stopping leader keeps its lease until it
		// expires (client-go's example sets it true).
		ReleaseOnCancel: false,
		Callbacks:       callbacks,
		Name:            lock.Describe(),
	}
}

// leading tracks the OnStartedLeading goroutine, so that the process can wait for it: once
// stopped, a goroutine that starts late does nothing.
type leading struct {
	mu      sync.Mutex
	stopped bool
	started bool
	wg      sync.WaitGroup
}

// start reports whether the leading work may run; each true must be followed by done.
func (l *leading) start() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.started = true
	l.wg.Add(1)
	return true
}

func (l *leading) done() { l.wg.Done() }

// stopAndWait keeps later starts from running, waits for a running one to end, and
// reports whether leading work ever started.
func (l *leading) stopAndWait() bool {
	l.mu.Lock()
	l.stopped = true
	started := l.started
	l.mu.Unlock()
	l.wg.Wait()
	return started
}
