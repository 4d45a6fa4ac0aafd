package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// options are the flags both commands share.
type options struct {
	kubeconfig  string
	netns       string
	healthAddr  string
	verbosity   int
	leaderElect bool
	// The Lease lives in kube-system, as cert-manager's charts put it: leaderhook
	// never injects there, so no release hook ever touches it.
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
}

// parseFlags parses args into a new FlagSet that add may extend with the
// command's own flags.
func parseFlags(command string, args []string, defaultHealthAddr string, add func(*flag.FlagSet)) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required: in-cluster configuration is not used)")
	fs.StringVar(&o.netns, "netns", defaultNetns(), "refuse to start unless this process is in the network namespace /run/netns/NAME, the only place the local cluster's addresses lead to it; empty: no check (a cluster of your own)")
	fs.StringVar(&o.healthAddr, "health-addr", defaultHealthAddr, "address of the /livez and /readyz endpoints")
	fs.IntVar(&o.verbosity, "v", logf.InfoLevel, "log verbosity (klog levels: 2 info, 4 debug)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run only while holding the leader Lease")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "kube-system", "namespace of the leader Lease")
	// Shorter than cert-manager's 60s/40s/15s: a test run that killed a process
	// should not wait a minute for its Lease. A clean stop releases it at once.
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a Lease is valid without renewal")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	if add != nil {
		add(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cert-manager %s --kubeconfig FILE [flags]\n\n", command)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	if o.leaderElect && !(o.retryPeriod < o.renewDeadline && o.renewDeadline < o.leaseDuration) {
		return nil, fmt.Errorf("leader election needs retry period (%s) < renew deadline (%s) < lease duration (%s)", o.retryPeriod, o.renewDeadline, o.leaseDuration)
	}
	return o, nil
}

// defaultNetns follows test/cluster/lib.sh: LEADERHOOK_NETNS, else "leaderhook".
func defaultNetns() string {
	if name, ok := os.LookupEnv("LEADERHOOK_NETNS"); ok {
		return name
	}
	return "leaderhook"
}

// setUp checks where the process runs, sets the log verbosity and loads the
// kubeconfig.
func (o *options) setUp() (*rest.Config, error) {
	if err := assertInNetns(o.netns); err != nil {
		return nil, err
	}
	logf.InitLogs()
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if err := klogFlags.Set("v", strconv.Itoa(o.verbosity)); err != nil {
		return nil, fmt.Errorf("setting log verbosity %d: %w", o.verbosity, err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", o.kubeconfig, err)
	}
	return config, nil
}

// assertInNetns refuses to run outside the named network namespace. The local
// cluster's addresses exist only inside it; outside, the same addresses lead
// to the machine's network (test/support/kube.ts guards the tests the same way).
func assertInNetns(name string) error {
	if name == "" {
		return nil
	}
	want, err := os.Stat("/run/netns/" + name)
	if err != nil {
		return fmt.Errorf("no network namespace %s (%w): start the local cluster (npm run cluster:up), or pass --netns= for a cluster of your own", name, err)
	}
	own, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("reading this process's network namespace: %w", err)
	}
	if !os.SameFile(want, own) {
		return fmt.Errorf("not inside the network namespace %s: run through test/cluster/in-netns.sh, or pass --netns= for a cluster of your own", name)
	}
	return nil
}

// leaderIdentity tells candidates apart; the host name alone would not, for
// two processes on one machine.
func leaderIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name for the leader identity: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("leader identity: %w", err)
	}
	return host + "_" + hex.EncodeToString(suffix), nil
}
