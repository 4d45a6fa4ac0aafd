// lfl-operator is a leader-for-life operator as operator-sdk users write them: it calls
// operator-lib's leader.Become, then runs its controller (a heartbeat) until it is stopped.
// Nothing here releases the lock: the garbage collector removes it once the pod object is
// gone, exactly as in the field.
package main

import (
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/operator-framework/operator-lib/leader"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"leaderhook.io/test/operators/internal/opshell"
)

func main() {
	log := opshell.NewLogger().WithName("lfl-operator")
	logf.SetLogger(log)
	// client-go (leader election among others) logs through klog: same stream, same format.
	klog.SetLogger(log)
	if err := run(log); err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(log logr.Logger) error {
	opts, err := opshell.ParseFlags("lfl-operator", "lfl-operator-lock", os.Args[1:])
	if err != nil {
		return err
	}
	pod, err := opshell.PodName()
	if err != nil {
		return err
	}
	ns, err := opshell.Namespace()
	if err != nil {
		return err
	}
	opshell.ScheduleCrash(log, opts)
	ctx := opshell.StopContext(log, opts)

	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("loading cluster configuration: %w", err)
	}
	// The heartbeat writes 10 times a second; client-go's default rate limit would stretch it.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}

	log.Info("trying", "pod", pod, "namespace", ns, "lock", opts.LockName)
	if err := leader.Become(ctx, opts.LockName, leader.WithClient(c)); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped", "pod", pod, "leader", false)
			return nil
		}
		return fmt.Errorf("becoming leader of lock %s/%s: %w", ns, opts.LockName, err)
	}
	log.Info("became leader", "pod", pod, "namespace", ns, "lock", opts.LockName)

	hb := &opshell.Heartbeat{Client: c, Namespace: ns, Name: opts.HeartbeatName(), Holder: pod, Interval: opts.HeartbeatInterval, Log: log}
	if err := hb.Run(ctx); err != nil {
		return err
	}
	log.Info("stopped", "pod", pod, "leader", true)
	return nil
}
