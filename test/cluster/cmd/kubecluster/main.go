// Command kubecluster is every Kubernetes component the local test cluster
// needs, in one binary: the shared packages compile once and the cache holds
// one file. The first argument picks the component, as hyperkube did.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "time/tzdata"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kube-proxy":              proxy.NewProxyCommand,
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func usage() {
	names := []string{"etcd", "kubectl"}
	for name := range components {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kubecluster COMPONENT [flags]\ncomponents: %v\n", names)
}

func main() {
	// Invoked through a symlink named after a component, or as `kubecluster
	// COMPONENT` (the cached binary is kubecluster-<hash of its sources>).
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "kubecluster" || strings.HasPrefix(name, "kubecluster-") {
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
			usage()
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	os.Args = append([]string{name}, args...)

	switch name {
	case "etcd":
		os.Exit(runEtcd(args))
	case "kubectl":
		command := kubectlcmd.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(command); err != nil {
			kubectlutil.CheckErr(err)
		}
		return
	}
	newCommand, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kubecluster: unknown component %q\n", name)
		usage()
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}
