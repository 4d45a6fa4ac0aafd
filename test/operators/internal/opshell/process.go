package opshell

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// NewProcessID returns a random id for this process: 16 hex digits, drawn once at start.
// A pod name can be reused (a StatefulSet's pods) and a container restarted inside the same
// pod (same name, same UID); only an id per process tells every writer of a heartbeat apart.
func NewProcessID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a process id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// PodUID is this pod's UID, from POD_UID (downward API metadata.uid, set by
// test/operators/manifests). The failover checker tells a pod from an earlier pod of the
// same name by it, so an operator without it refuses to start instead of writing heartbeats
// nobody can attribute.
func PodUID() (string, error) {
	if uid := os.Getenv("POD_UID"); uid != "" {
		return uid, nil
	}
	return "", errors.New("required env POD_UID not set: give the operator container POD_UID from the downward API (fieldPath metadata.uid), as test/operators/manifests do")
}
