package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cert-manager/cert-manager/pkg/controller"
)

// An unreachable API server: constructing the loops must not need one, and
// the preflight must fail on it with the address in the error.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: nobody
  user: {token: none}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
`

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every loop a Certificate of deploy/certificates.yaml goes through is
// registered by the cert-manager version go.mod pins, and constructs.
func TestControllersConstruct(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{Kubeconfig: writeKubeconfig(t), KubernetesAPIQPS: 20, KubernetesAPIBurst: 50})
	if err != nil {
		t.Fatal(err)
	}
	loops, err := constructLoops(factory)
	if err != nil {
		t.Fatal(err)
	}
	if len(loops) != len(controllerNames) {
		t.Fatalf("constructed %d loops for %d controllers", len(loops), len(controllerNames))
	}
}

func TestPreflightNamesTheServer(t *testing.T) {
	o, err := parseFlags("controller", []string{"--kubeconfig", writeKubeconfig(t), "--netns="}, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	config, err := o.setUp()
	if err != nil {
		t.Fatal(err)
	}
	err = preflight(config, o.kubeconfig)
	if err == nil {
		t.Fatal("preflight against 127.0.0.1:1 succeeded")
	}
	if want := "reaching the API server https://127.0.0.1:1"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--kubeconfig=x", "extra"},
		{"--kubeconfig=x", "--leader-election-renew-deadline=20s"},
	} {
		if _, err := parseFlags("controller", args, "127.0.0.1:0", nil); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}
