// Command cert-manager runs cert-manager's controller and cainjector, built
// from the root module github.com/cert-manager/cert-manager, for the local test
// cluster. The release's own commands live in modules the Go module proxy does
// not serve, so this wires the root module's public controller packages
// itself, and only those leaderhook's deploy/certificates.yaml needs:
// SelfSigned and CA Issuers, Certificates, CertificateRequests, their Secrets,
// and the CA injection into a MutatingWebhookConfiguration.
//
//	cert-manager controller --kubeconfig FILE [flags]
//	cert-manager cainjector --kubeconfig FILE [flags]
//	cert-manager version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/cert-manager/cert-manager/pkg/util"
)

const certManagerModule = "github.com/cert-manager/cert-manager"

func usage() {
	fmt.Fprint(os.Stderr, `usage: cert-manager COMMAND [flags]

cert-manager's controllers, built from the cert-manager Go module, for
leaderhook's local test cluster.

commands:
  controller   Issuers (SelfSigned, CA), Certificates and CertificateRequests
  cainjector   caBundle of MutatingWebhookConfigurations (cert-manager.io/inject-ca-from)
  version      the cert-manager module version this binary is built from

Run "cert-manager COMMAND --help" for a command's flags.
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	command, args := os.Args[1], os.Args[2:]
	// User agents, field managers and logs name the module version the
	// binary was built from; go.mod is where it is chosen.
	util.AppVersion = moduleVersion()

	var run func(context.Context, []string) error
	switch command {
	case "controller":
		run = runController
	case "cainjector":
		run = runCAInjector
	case "version":
		fmt.Println(util.AppVersion)
		return
	case "help", "-h", "-help", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "cert-manager: unknown command %q\n\n", command)
		usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "cert-manager %s: %v\n", command, err)
		os.Exit(1)
	}
}

// moduleVersion is the version of the cert-manager module linked into this
// binary, as go.mod selected it.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == certManagerModule {
				return dep.Version
			}
		}
	}
	return "unknown"
}
