package opshell

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Operator is what every operator under test starts from: their identity (pod name and UID,
// and an id of this process), flags, a context that ends on SIGTERM (after
// --shutdown-delay, unless --ignore-sigterm), and the cluster configuration.
type Operator struct {
	Log       logr.Logger
	Opts      Options
	Pod       string
	PodUID    string
	ProcessID string
	Namespace string
	Ctx       context.Context
	Config    *rest.Config
}

// Main sets up logging, builds the Operator from the command line and the
// environment, runs it, and exits 1 with a log line on error.
func Main(program, defaultLock string, run func(*Operator) error) {
	log := NewLogger().WithName(program)
	processID, err := NewProcessID()
	if err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
	// Every line names the process that wrote it, operator-lib's and controller-runtime's
	// too: the failover tests attribute lines to a process, not only to a container.
	log = log.WithValues("processID", processID)
	logf.SetLogger(log)
	// client-go (leader election among others) logs through klog: same stream, same format.
	klog.SetLogger(log)
	op, err := setUp(log, program, defaultLock, processID)
	if err == nil {
		err = run(op)
	}
	if err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func setUp(log logr.Logger, program, defaultLock, processID string) (*Operator, error) {
	opts, err := ParseFlags(program, defaultLock, os.Args[1:])
	if err != nil {
		return nil, err
	}
	pod, err := PodName()
	if err != nil {
		return nil, err
	}
	podUID, err := PodUID()
	if err != nil {
		return nil, err
	}
	ns, err := Namespace()
	if err != nil {
		return nil, err
	}
	ScheduleCrash(log, opts)
	ctx := StopContext(log, opts)
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading cluster configuration: %w", err)
	}
	// The heartbeat writes 10 times a second; client-go's default rate limit would stretch it.
	cfg.QPS, cfg.Burst = 50, 100
	return &Operator{Log: log, Opts: opts, Pod: pod, PodUID: podUID, ProcessID: processID, Namespace: ns, Ctx: ctx, Config: cfg}, nil
}
