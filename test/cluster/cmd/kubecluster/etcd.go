package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd starts a single-member etcd with the embed package: the same
// server the etcd binary runs, configured by the few flags the cluster needs.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "directory for the member's data (required)")
	clientURL := fs.String("listen-client-url", "http://127.0.0.1:2379", "URL clients connect to")
	peerURL := fs.String("listen-peer-url", "http://127.0.0.1:2380", "URL for peer traffic (unused by a single member, but must be free)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: --listen-client-url: %v\n", err)
		return 2
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: --listen-peer-url: %v\n", err)
		return 2
	}

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.LogLevel = "warn"
	// Benchmarks fill namespaces with hundreds of MiB of ConfigMaps: keep the
	// history short and the quota at etcd's largest recommended size, so the
	// test cluster never reaches "mvcc: database space exceeded".
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1m"
	cfg.QuotaBackendBytes = 8 << 30

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: starting with data dir %s: %v\n", *dataDir, err)
		return 1
	}
	defer server.Close()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-server.Server.ReadyNotify():
		fmt.Fprintln(os.Stderr, "etcd: ready to serve clients on", client.String())
	case <-stop:
		return 0
	}
	select {
	case err := <-server.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	case <-stop:
		return 0
	}
}
