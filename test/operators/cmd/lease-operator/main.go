// lease-operator is a kubebuilder-style operator: a controller-runtime Manager with Lease
// leader election as the scaffold configures it (LeaderElectionReleaseOnCancel left false,
// default identity hostname_uuid, 15 s lease), running a heartbeat as a Runnable that needs
// the leader lease. After its leader stops, standbys wait for the lease to expire.
package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leaderhook.io/test/operators/internal/opshell"
)

// renewDeadline is controller-runtime's default (manager.Options.RenewDeadline); the lock's
// API client times out after half of it, as in the lock the manager would build itself.
const renewDeadline = 10 * time.Second

func main() {
	opshell.Main("lease-operator", "lease-operator-lock", run)
}

func run(op *opshell.Operator) error {
	log, opts, pod, ns, ctx, cfg := op.Log, op.Opts, op.Pod, op.Namespace, op.Ctx, op.Config
	lock, err := newLeaseLock(cfg, ns, opts.LockName)
	if err != nil {
		return err
	}
	identity := lock.Identity()
	mgr, err := manager.New(cfg, manager.Options{
		LeaderElection:                      true,
		LeaderElectionID:                    opts.LockName,
		LeaderElectionResourceLockInterface: lock,
		// The kubebuilder scaffold leaves LeaderElectionReleaseOnCancel commented out: a
		// stopping leader does not give up its lease, standbys wait for it to expire.
		LeaderElectionReleaseOnCancel: false,
		// No ports: the test operators serve neither metrics nor probes.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	// The heartbeat only writes, so it uses a direct client instead of the manager's
	// cache (which would need list/watch on ConfigMaps).
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}
	hb := op.NewHeartbeat(c, identity)
	if err := mgr.Add(&electedHeartbeat{hb: hb, pod: pod, lock: opts.LockName}); err != nil {
		return fmt.Errorf("adding heartbeat runnable: %w", err)
	}

	log.Info("trying", "pod", pod, "podUID", op.PodUID, "namespace", ns, "lock", opts.LockName, "lockIdentity", identity)
	err = mgr.Start(ctx)
	log.Info("stopped", "pod", pod, "error", errString(err))
	if err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// newLeaseLock is the lock the manager would create from LeaderElectionID, built by the same
// controller-runtime function, so that this process knows the identity (hostname_uuid) it
// holds the Lease as: the manager keeps its own lock to itself, and the heartbeat must name it.
func newLeaseLock(cfg *rest.Config, namespace, name string) (resourcelock.Interface, error) {
	recorders, err := newEventRecorders(cfg)
	if err != nil {
		return nil, err
	}
	// NewResourceLock sets the user agent and timeout on the config it is given: a copy, as
	// the manager passes it, so that the heartbeat's client keeps its own.
	lock, err := leaderelection.NewResourceLock(rest.CopyConfig(cfg), recorders, leaderelection.Options{
		LeaderElection:          true,
		LeaderElectionID:        name,
		LeaderElectionNamespace: namespace,
		RenewDeadline:           renewDeadline,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the Lease lock %s/%s: %w", namespace, name, err)
	}
	return lock, nil
}

// eventRecorders gives the lock what the manager's own recorder provider would: Events
// ("<identity> became leader" on the Lease) sent to the API through client-go's broadcaster.
type eventRecorders struct {
	broadcaster record.EventBroadcaster
}

func newEventRecorders(cfg *rest.Config) (eventRecorders, error) {
	events, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return eventRecorders{}, fmt.Errorf("creating the Events client of the Lease lock: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: events.Events("")})
	return eventRecorders{broadcaster: broadcaster}, nil
}

func (e eventRecorders) GetEventRecorderFor(name string) record.EventRecorder {
	return e.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: name})
}

// electedHeartbeat runs the heartbeat only on the leader: controller-runtime starts it
// when this manager acquires the lease and cancels it when the manager stops.
type electedHeartbeat struct {
	hb   *opshell.Heartbeat
	pod  string
	lock string
}

func (e *electedHeartbeat) NeedLeaderElection() bool { return true }

func (e *electedHeartbeat) Start(ctx context.Context) error {
	e.hb.Log.Info("became leader", "pod", e.pod, "namespace", e.hb.Namespace, "lock", e.lock, "lockIdentity", e.hb.LockIdentity)
	return e.hb.Run(ctx)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
