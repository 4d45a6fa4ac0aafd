// lfl-operator is a leader-for-life operator as operator-sdk users write them: it calls
// operator-lib's leader.Become, then runs its controller (a heartbeat) until it is stopped.
// Nothing here releases the lock: the garbage collector removes it once the pod object is
// gone, exactly as in the field.
package main

import (
	"fmt"

	"github.com/operator-framework/operator-lib/leader"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leaderhook.io/test/operators/internal/opshell"
)

func main() {
	opshell.Main("lfl-operator", "lfl-operator-lock", run)
}

func run(op *opshell.Operator) error {
	log, opts, pod, ns, ctx, cfg := op.Log, op.Opts, op.Pod, op.Namespace, op.Ctx, op.Config
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}

	log.Info("trying", "pod", pod, "podUID", op.PodUID, "namespace", ns, "lock", opts.LockName)
	if err := leader.Become(ctx, opts.LockName, leader.WithClient(c)); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped", "pod", pod, "leader", false)
			return nil
		}
		return fmt.Errorf("becoming leader of lock %s/%s: %w", ns, opts.LockName, err)
	}
	log.Info("became leader", "pod", pod, "namespace", ns, "lock", opts.LockName, "lockIdentity", op.PodUID)
	go opshell.FillDisk(log, opts)

	// operator-lib's lock is owned by this pod: its ownerReference carries the pod's UID.
	if err := op.NewHeartbeat(c, op.PodUID).Run(ctx); err != nil {
		return err
	}
	log.Info("stopped", "pod", pod, "leader", true)
	return nil
}
