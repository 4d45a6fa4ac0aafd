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

// Heartbeat is the fake controller: while this pod acts as leader it writes who it is, a
// sequence number and the time into one ConfigMap every Interval. Two pods acting as leader
// at once show up as interleaved holders in the ConfigMap's history, which the failover
// tests watch.
type Heartbeat struct {
	Client    client.Client
	Namespace string
	Name      string
	Holder    string
	Interval  time.Duration
	Log       logr.Logger
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

func (h *Heartbeat) write(ctx context.Context, seq int64) error {
	data := map[string]string{
		"holder": h.Holder,
		"seq":    strconv.FormatInt(seq, 10),
		"time":   time.Now().UTC().Format(time.RFC3339Nano),
	}
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
