package main

import (
	"os"
	"regexp"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The lock is controller-runtime's default one: a Lease, held as hostname_uuid, a new
// identity for every process.
func TestNewLeaseLockIsTheDefaultLockWithAnIdentityPerProcess(t *testing.T) {
	// Building clients contacts no server.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	first, err := newLeaseLock(cfg, "ns", "lease-operator-lock")
	if err != nil {
		t.Fatalf("newLeaseLock: %v", err)
	}
	second, err := newLeaseLock(cfg, "ns", "lease-operator-lock")
	if err != nil {
		t.Fatalf("newLeaseLock: %v", err)
	}
	if _, ok := first.(*resourcelock.LeaseLock); !ok {
		t.Fatalf("lock is a %T, want *resourcelock.LeaseLock", first)
	}
	if got := first.Describe(); got != "ns/lease-operator-lock" {
		t.Fatalf("Describe() = %q", got)
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	identity := regexp.MustCompile(`^` + regexp.QuoteMeta(hostname) + `_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	if !identity.MatchString(first.Identity()) {
		t.Fatalf("Identity() = %q, want %s_<uuid>", first.Identity(), hostname)
	}
	if first.Identity() == second.Identity() {
		t.Fatalf("two locks share the identity %q", first.Identity())
	}
}

func TestNewLeaseLockLeavesTheOperatorsConfigAlone(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", UserAgent: "lease-operator"}
	if _, err := newLeaseLock(cfg, "ns", "lease-operator-lock"); err != nil {
		t.Fatalf("newLeaseLock: %v", err)
	}
	if cfg.UserAgent != "lease-operator" || cfg.Timeout != 0 {
		t.Fatalf("the operator's config changed: user agent %q, timeout %s", cfg.UserAgent, cfg.Timeout)
	}
}
