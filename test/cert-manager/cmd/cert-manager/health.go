package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// readyState is what /readyz reports: ready, or the reason it is not yet.
type readyState struct {
	mu      sync.Mutex
	waiting string
}

func newReadyState(waiting string) *readyState { return &readyState{waiting: waiting} }

func (r *readyState) notReady(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting = reason
}

func (r *readyState) ready() { r.notReady("") }

func (r *readyState) reason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}

// healthServer serves /livez (the process runs) and /readyz (200 once ready,
// 503 with the reason before). It listens before anything else starts, so a
// taken port fails the command at once.
type healthServer struct {
	listener net.Listener
	server   *http.Server
}

func listenHealth(addr string, r *readyState) (*healthServer, error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for health checks on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reason := r.reason(); reason != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, reason)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return &healthServer{listener: listener, server: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}, nil
}

// serve runs until ctx ends.
func (h *healthServer) serve(ctx context.Context, log logr.Logger) error {
	log.Info("serving health checks", "address", h.listener.Addr().String())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = h.server.Shutdown(shutdown)
	}()
	if err := h.server.Serve(h.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("health server on %s: %w", h.listener.Addr(), err)
	}
	return nil
}
