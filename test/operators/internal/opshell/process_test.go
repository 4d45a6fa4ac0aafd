package opshell

import (
	"regexp"
	"strings"
	"testing"
)

func TestNewProcessIDIsRandomHex(t *testing.T) {
	a, err := NewProcessID()
	if err != nil {
		t.Fatalf("NewProcessID: %v", err)
	}
	b, err := NewProcessID()
	if err != nil {
		t.Fatalf("NewProcessID: %v", err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) {
		t.Fatalf("NewProcessID() = %q, want 16 hex digits", a)
	}
	if a == b {
		t.Fatalf("two processes drew the same id %q", a)
	}
}

func TestPodUIDIsRequired(t *testing.T) {
	t.Setenv("POD_UID", "6f0e8c1a-1d2b-4c3d-9e4f-5a6b7c8d9e0f")
	if uid, err := PodUID(); err != nil || uid != "6f0e8c1a-1d2b-4c3d-9e4f-5a6b7c8d9e0f" {
		t.Fatalf("PodUID() = %q, %v", uid, err)
	}
	t.Setenv("POD_UID", "")
	if _, err := PodUID(); err == nil || !strings.Contains(err.Error(), "POD_UID") || !strings.Contains(err.Error(), "metadata.uid") {
		t.Fatalf("PodUID() without POD_UID: error %v, want one naming POD_UID and metadata.uid", err)
	}
}
