// lease-operator is a kubebuilder-style operator: a controller-runtime Manager with Lease
// leader election as the scaffold configures it (LeaderElectionReleaseOnCancel left false,
// default identity hostname_uuid, 15 s lease), running a heartbeat as a Runnable that needs
// the leader lease. After its leader stops, standbys wait for the lease to expire.
package main

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leaderhook.io/test/operators/internal/opshell"
)

func main() {
	opshell.Main("lease-operator", "lease-operator-lock", run)
}

func run(op *opshell.Operator) error {
	log, opts, pod, ns, ctx, cfg := op.Log, op.Opts, op.Pod, op.Namespace, op.Ctx, op.Config
	mgr, err := manager.New(cfg, manager.Options{
		LeaderElection:   true,
		LeaderElectionID: opts.LockName,
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
	hb := &opshell.Heartbeat{Client: c, Namespace: ns, Name: opts.HeartbeatName(), Holder: pod, Interval: opts.HeartbeatInterval, Log: log}
	if err := mgr.Add(&electedHeartbeat{hb: hb, pod: pod, lock: opts.LockName}); err != nil {
		return fmt.Errorf("adding heartbeat runnable: %w", err)
	}

	log.Info("trying", "pod", pod, "namespace", ns, "lock", opts.LockName)
	err = mgr.Start(ctx)
	log.Info("stopped", "pod", pod, "error", errString(err))
	if err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
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
	e.hb.Log.Info("became leader", "pod", e.pod, "namespace", e.hb.Namespace, "lock", e.lock)
	return e.hb.Run(ctx)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
