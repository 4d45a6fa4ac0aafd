package opshell

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Heartbeat is the fake controller: while this process acts as leader it writes who it is, a
// sequence number and the time into one ConfigMap every Interval. Two processes acting as
// leader at once show up as interleaved writers in the ConfigMap's history, which the
// failover tests watch (test/support/split-brain.ts checks it against the lock's history).
type Heartbeat struct {
	Client    client.Client
	Namespace string
	Name      string
	// Holder is the pod's name: the one field of the first heartbeats, kept for readers of it.
	Holder string
	// PodUID tells this pod from an earlier pod of the same name (a StatefulSet's).
	PodUID string
	// ProcessID tells this process from the one before a container restart in the same pod.
	ProcessID string
	// LockIdentity is the holder identity the lock carries while this process holds it:
	// the owner pod's UID on operator-lib's ConfigMap, controller-runtime's hostname_uuid on
	// a Lease, the pod's name on client-go-operator's Lease. The checker compares it with the
	// lock at the heartbeat's revision.
	LockIdentity string
	Interval     time.Duration
	Log          logr.Logger
}

// NewHeartbeat is the heartbeat of this operator process into opts.HeartbeatName(), for the
// lock it holds as lockIdentity.
func (op *Operator) NewHeartbeat(c client.Client, lockIdentity string) *Heartbeat {
	return &Heartbeat{
		Client:       c,
		Namespace:    op.Namespace,
		Name:         op.Opts.HeartbeatName(),
		Holder:       op.Pod,
		PodUID:       op.PodUID,
		ProcessID:    op.ProcessID,
		LockIdentity: lockIdentity,
		Interval:     op.Opts.HeartbeatInterval,
		Log:          op.Log,
	}
}

// Run writes heartbeats until ctx ends. Write failures are logged and retried on the next
// tick: a leader that cannot reach the API server is still the leader.
func (h *Heartbeat) Run(ctx context.Context) error {
	ticker := time.NewTicker(h.Interval)
	defer ticker.Stop()
	var seq int64
	var failing bool
	for {
		seq++
		err := h.write(ctx, seq)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			h.Log.Error(err, "heartbeat failed", "seq", seq)
			failing = true
		case err == nil && failing:
			h.Log.Info("heartbeat recovered", "seq", seq)
			failing = false
		case err == nil && seq == 1:
			h.Log.Info("heartbeat started", "configMap", h.Name, "interval", h.Interval.String())
		}
		select {
		case <-ctx.Done():
			h.Log.Info("heartbeat stopped", "lastSeq", seq)
			return nil
		case <-ticker.C:
		}
	}
}

// data is what one write puts into the ConfigMap: all of it, every time, so each revision
// of the ConfigMap names its writer on its own.
func (h *Heartbeat) data(seq int64, now time.Time) map[string]string {
	return map[string]string{
		"holder":       h.Holder,
		"podUID":       h.PodUID,
		"processID":    h.ProcessID,
		"lockIdentity": h.LockIdentity,
		"seq":          strconv.FormatInt(seq, 10),
		"time":         now.UTC().Format(time.RFC3339Nano),
	}
}

func (h *Heartbeat) write(ctx context.Context, seq int64) error {
	data := h.data(seq, time.Now())
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return fmt.Errorf("encoding heartbeat patch: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: h.Name}}
	err = h.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: h.Name}, Data: data}
		err = h.Client.Create(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("writing heartbeat ConfigMap %s/%s: %w", h.Namespace, h.Name, err)
	}
	return nil
}
