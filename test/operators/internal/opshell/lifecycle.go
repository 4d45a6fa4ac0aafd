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

// FillDisk writes o.FillDiskMiB MiB of zeros to o.FillDiskPath (if set), as a leader that
// logs or caches without bound would: the kubelet evicts a pod past its ephemeral-storage
// limit. Errors are logged, not fatal: a full disk is the point.
func FillDisk(log logr.Logger, o Options) {
	if o.FillDiskMiB <= 0 {
		return
	}
	log.Info("filling disk", "path", o.FillDiskPath, "mib", o.FillDiskMiB)
	f, err := os.Create(o.FillDiskPath)
	if err != nil {
		log.Error(err, "filling disk failed", "path", o.FillDiskPath)
		return
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := 0; i < o.FillDiskMiB; i++ {
		if _, err := f.Write(chunk); err != nil {
			log.Error(err, "filling disk failed", "path", o.FillDiskPath, "writtenMiB", i)
			return
		}
	}
	if err := f.Sync(); err != nil {
		log.Error(err, "filling disk failed", "path", o.FillDiskPath)
		return
	}
	log.Info("filled disk", "path", o.FillDiskPath, "mib", o.FillDiskMiB)
}
