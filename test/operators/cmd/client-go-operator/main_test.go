package main

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"

	"leaderhook.io/test/operators/internal/opshell"
)

// The lock is a Lease held as the pod's name, which leaderhook's R1 counts as the pod's own
// (docs/design.md#leases-held-by-identity): POD_NAME when set, else the hostname.
func TestTheLeaseIsHeldAsThePodName(t *testing.T) {
	// Building clients contacts no server.
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", "client-go-operator-7c9d8f6b5-x2v4q")
	pod, err := opshell.PodName()
	if err != nil {
		t.Fatal(err)
	}
	lock := newLeaseLock(clientset, "ns", "client-go-operator-lock", pod)
	if got := lock.Identity(); got != "client-go-operator-7c9d8f6b5-x2v4q" {
		t.Fatalf("Identity() = %q, want the pod name", got)
	}
	if got := lock.Describe(); got != "ns/client-go-operator-lock" {
		t.Fatalf("Describe() = %q", got)
	}
}

func TestTheElectionUsesTheCoreClientTimingsWithoutReleaseOnCancel(t *testing.T) {
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	callbacks := leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}
	cfg := electionConfig(newLeaseLock(clientset, "ns", "lock", "pod-1"), callbacks)
	if cfg.ReleaseOnCancel {
		t.Fatal("ReleaseOnCancel is set: a stopping leader would free its own lease")
	}
	if cfg.LeaseDuration != 15*time.Second || cfg.RenewDeadline != 10*time.Second || cfg.RetryPeriod != 2*time.Second {
		t.Fatalf("timings %s/%s/%s, want 15s/10s/2s", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	}
	if _, err := leaderelection.NewLeaderElector(cfg); err != nil {
		t.Fatalf("client-go refuses the configuration: %v", err)
	}
}

func TestLeadingWorkIsWaitedForAndNeverStartsLate(t *testing.T) {
	var l leading
	if !l.start() {
		t.Fatal("start before stop refused")
	}
	waited := make(chan bool)
	go func() { waited <- l.stopAndWait() }()
	select {
	case <-waited:
		t.Fatal("stopAndWait returned while the leading work still ran")
	case <-time.After(50 * time.Millisecond):
	}
	l.done()
	if started := <-waited; !started {
		t.Fatal("stopAndWait reported no leading work")
	}
	if l.start() {
		t.Fatal("leading work started after stopAndWait")
	}

	var never leading
	if never.stopAndWait() {
		t.Fatal("stopAndWait reported leading work that never started")
	}
}
