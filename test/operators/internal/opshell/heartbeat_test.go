package opshell

import (
	"testing"
	"time"
)

func TestHeartbeatDataNamesItsWriter(t *testing.T) {
	h := &Heartbeat{Holder: "op-0", PodUID: "0b6c5e2a-uid", ProcessID: "4f1d2c3b5a697887", LockIdentity: "op-0_5c1e"}
	got := h.data(7, time.Date(2026, 1, 2, 3, 4, 5, 6_000, time.FixedZone("CET", 3600)))
	want := map[string]string{
		"holder":       "op-0",
		"podUID":       "0b6c5e2a-uid",
		"processID":    "4f1d2c3b5a697887",
		"lockIdentity": "op-0_5c1e",
		"seq":          "7",
		"time":         "2026-01-02T02:04:05.000006Z",
	}
	if len(got) != len(want) {
		t.Fatalf("data = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("data[%q] = %q, want %q", k, got[k], v)
		}
	}
}

func TestNewHeartbeatFromOperator(t *testing.T) {
	op := &Operator{Pod: "op-0", PodUID: "uid-1", ProcessID: "p-1", Namespace: "ns", Opts: Options{LockName: "lock", HeartbeatInterval: time.Second}}
	h := op.NewHeartbeat(nil, "uid-1")
	if h.Name != "lock-heartbeat" || h.Namespace != "ns" || h.Holder != "op-0" || h.PodUID != "uid-1" || h.ProcessID != "p-1" || h.LockIdentity != "uid-1" || h.Interval != time.Second {
		t.Fatalf("NewHeartbeat = %+v", h)
	}
}
