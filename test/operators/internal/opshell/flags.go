package opshell

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// Options are the behaviours the failover tests switch on per Deployment.
type Options struct {
	// LockName names the leader lock: the ConfigMap for leader-for-life, the Lease for
	// Lease election. The heartbeat ConfigMap is LockName + "-heartbeat".
	LockName string
	// IgnoreSIGTERM keeps the operator running after SIGTERM, as a wedged operator would;
	// only the kubelet's SIGKILL at the end of the grace period stops it.
	IgnoreSIGTERM bool
	// ShutdownDelay keeps the operator working as leader (heartbeat included) for this long
	// after SIGTERM before it exits: a slow, orderly shutdown.
	ShutdownDelay time.Duration
	// CrashAfter makes the process exit with status 1 this long after it started, so the
	// kubelet restarts the container inside the same pod.
	CrashAfter time.Duration
	// HeartbeatInterval is how often the leader writes the heartbeat ConfigMap.
	HeartbeatInterval time.Duration
	// FillDiskMiB makes the leader, once it leads, write this many MiB to FillDiskPath:
	// past its ephemeral-storage limit, so that the kubelet evicts the pod.
	FillDiskMiB  int
	FillDiskPath string
}

// ParseFlags reads Options from args (without the program name).
func ParseFlags(program, defaultLock string, args []string) (Options, error) {
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	var o Options
	fs.StringVar(&o.LockName, "lock-name", defaultLock, "name of the leader lock (and prefix of the heartbeat ConfigMap)")
	fs.BoolVar(&o.IgnoreSIGTERM, "ignore-sigterm", false, "keep running on SIGTERM")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", 0, "keep working as leader this long after SIGTERM before exiting")
	fs.DurationVar(&o.CrashAfter, "crash-after", 0, "exit with status 1 this long after start (0: never)")
	fs.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", 100*time.Millisecond, "interval between heartbeat writes")
	fs.IntVar(&o.FillDiskMiB, "fill-disk-mib", 0, "once leading, write this many MiB to --fill-disk-path (0: never)")
	fs.StringVar(&o.FillDiskPath, "fill-disk-path", "/scratch/fill", "the file --fill-disk-mib writes")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.LockName == "" {
		return o, errors.New("--lock-name must not be empty")
	}
	if o.ShutdownDelay < 0 || o.CrashAfter < 0 {
		return o, errors.New("--shutdown-delay and --crash-after must not be negative")
	}
	if o.FillDiskMiB < 0 {
		return o, errors.New("--fill-disk-mib must not be negative")
	}
	if o.HeartbeatInterval <= 0 {
		return o, errors.New("--heartbeat-interval must be positive")
	}
	return o, nil
}

// HeartbeatName is the ConfigMap the leader writes its heartbeat to.
func (o Options) HeartbeatName() string { return o.LockName + "-heartbeat" }

// PodName is this pod's name: POD_NAME from the downward API, else the hostname, which is
// the pod name for every pod without spec.hostname or hostNetwork.
func PodName() (string, error) {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n, nil
	}
	n, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading hostname for the pod name (POD_NAME is not set): %w", err)
	}
	return n, nil
}

const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Namespace is the pod's namespace: POD_NAMESPACE, else the service-account mount, which is
// where operator-lib and controller-runtime read it from as well.
func Namespace() (string, error) {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if err != nil {
		return "", fmt.Errorf("reading namespace from %s (POD_NAMESPACE is not set): %w", serviceAccountNamespaceFile, err)
	}
	ns := strings.TrimSpace(string(b))
	if ns == "" {
		return "", fmt.Errorf("namespace file %s is empty", serviceAccountNamespaceFile)
	}
	return ns, nil
}
