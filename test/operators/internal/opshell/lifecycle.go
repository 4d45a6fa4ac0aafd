package opshell

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// StopContext returns a context that ends when the operator should stop working: SIGTERM
// or SIGINT, plus the configured shutdown delay. It logs "stopping" the moment the signal
// arrives, which is what the failover tests read as "the kubelet told the operator to stop".
// With IgnoreSIGTERM the context never ends: the process runs until SIGKILL.
func StopContext(log logr.Logger, o Options) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for sig := range sigs {
			if o.IgnoreSIGTERM {
				log.Info("signal ignored", "signal", sig.String())
				continue
			}
			log.Info("stopping", "signal", sig.String(), "shutdownDelay", o.ShutdownDelay.String())
			if o.ShutdownDelay > 0 {
				time.Sleep(o.ShutdownDelay)
			}
			cancel()
			return
		}
	}()
	return ctx
}

// ScheduleCrash exits the process with status 1 after o.CrashAfter (if set), without any
// cleanup, as a crashing operator would.
func ScheduleCrash(log logr.Logger, o Options) {
	if o.CrashAfter <= 0 {
		return
	}
	time.AfterFunc(o.CrashAfter, func() {
		log.Info("crashing", "after", o.CrashAfter.String())
		os.Exit(1)
	})
}
