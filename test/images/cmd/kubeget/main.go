// Command kubeget proves that a pod reaches the API server the way every
// in-cluster client does: rest.InClusterConfig (the kubernetes Service's
// environment variables, the projected service-account token and CA),
// unmodified, then GET /version. It prints the server version and exits 0,
// or prints the error and exits 1.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func main() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeget: in-cluster configuration: %v\n", err)
		os.Exit(1)
	}
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeget: client for %s: %v\n", cfg.Host, err)
		os.Exit(1)
	}
	version, err := client.ServerVersion()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeget: GET %s/version: %v\n", cfg.Host, err)
		os.Exit(1)
	}
	out, _ := json.Marshal(map[string]string{"host": cfg.Host, "gitVersion": version.GitVersion})
	fmt.Println(string(out))
}
