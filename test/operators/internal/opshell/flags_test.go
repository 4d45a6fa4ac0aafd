package opshell

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	o, err := ParseFlags("op", "op-lock", nil)
	if err != nil {
		t.Fatalf("ParseFlags(no args): %v", err)
	}
	if o.LockName != "op-lock" || o.IgnoreSIGTERM || o.ShutdownDelay != 0 || o.CrashAfter != 0 || o.HeartbeatInterval != 100*time.Millisecond {
		t.Fatalf("defaults = %+v", o)
	}
	if got := o.HeartbeatName(); got != "op-lock-heartbeat" {
		t.Fatalf("HeartbeatName() = %q", got)
	}
}

func TestParseFlagsAll(t *testing.T) {
	o, err := ParseFlags("op", "op-lock", []string{"--lock-name=x", "--ignore-sigterm", "--shutdown-delay=3s", "--crash-after=1m", "--heartbeat-interval=50ms", "--fill-disk-mib=64", "--fill-disk-path=/tmp/f"})
	if err != nil {
		t.Fatalf("ParseFlags: %v", err)
	}
	want := Options{LockName: "x", IgnoreSIGTERM: true, ShutdownDelay: 3 * time.Second, CrashAfter: time.Minute, HeartbeatInterval: 50 * time.Millisecond, FillDiskMiB: 64, FillDiskPath: "/tmp/f"}
	if o != want {
		t.Fatalf("ParseFlags = %+v, want %+v", o, want)
	}
}

func TestParseFlagsRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock-name="}, "--lock-name must not be empty"},
		{[]string{"--shutdown-delay=-1s"}, "must not be negative"},
		{[]string{"--crash-after=-1s"}, "must not be negative"},
		{[]string{"--heartbeat-interval=0s"}, "must be positive"},
		{[]string{"--fill-disk-mib=-1"}, "--fill-disk-mib must not be negative"},
		{[]string{"extra"}, "unexpected arguments: extra"},
		{[]string{"--shutdown-delay=soon"}, "invalid value"},
	} {
		_, err := ParseFlags("op", "op-lock", tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFlags(%q) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestNamespaceFromEnv(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "ns1")
	ns, err := Namespace()
	if err != nil || ns != "ns1" {
		t.Fatalf("Namespace() = %q, %v", ns, err)
	}
}

func TestPodNameFromEnvOrHostname(t *testing.T) {
	t.Setenv("POD_NAME", "pod-1")
	if n, err := PodName(); err != nil || n != "pod-1" {
		t.Fatalf("PodName() with POD_NAME = %q, %v", n, err)
	}
	t.Setenv("POD_NAME", "")
	if n, err := PodName(); err != nil || n == "" {
		t.Fatalf("PodName() from hostname = %q, %v", n, err)
	}
}
