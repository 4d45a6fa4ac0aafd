// Package opshell is what the test operators share: JSON logging, flags and signal
// behaviour, and the fake controller that proves who is acting as leader.
package opshell

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

var stdoutMu sync.Mutex

// NewLogger returns a logr.Logger that writes one JSON object per line to stdout with an
// RFC3339Nano "ts", so the failover tests can order events from different pods on one
// time axis. The same logger is handed to operator-lib and controller-runtime, whose own
// messages ("Trying to become the leader.", "attempting to acquire leader lease") then
// appear in the same stream, under their logger names.
func NewLogger() logr.Logger {
	return funcr.NewJSON(func(obj string) {
		stdoutMu.Lock()
		defer stdoutMu.Unlock()
		fmt.Fprintln(os.Stdout, obj)
	}, funcr.Options{
		LogTimestamp:    true,
		TimestampFormat: time.RFC3339Nano,
		Verbosity:       0,
	})
}
