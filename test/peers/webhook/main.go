// Command peer is leaderhook's webhook written as an idiomatic
// controller-runtime webhook (kubebuilder style): admission.Handler, the
// typed decoder, admission.PatchResponseFromRaw, a webhook.Server with TLS
// from files and HTTP/2 disabled as kubebuilder scaffolds it. It does the same
// mutation as src/injector (see inject.go) and exists to be compared with
// leaderhook: for equality by test/peers/webhook/equality.test.ts and for
// speed and memory by test/bench/webhook.bench.ts. Not shipped.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

type podInjector struct {
	decoder  admission.Decoder
	settings Settings
}

func (h *podInjector) Handle(ctx context.Context, req admission.Request) admission.Response {
	// controller-runtime's logger already carries the request's uid, namespace and name.
	log := ctrl.LoggerFrom(ctx)
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if reason := skipReason(pod); reason != "" {
		log.Info("admission answered", "reason", reason)
		return admission.Allowed(reason)
	}
	warnings := injectPod(pod, h.settings)
	marshaled, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, marshaled).WithWarnings(warnings...)
	log.Info("admission answered", "patchOperations", len(resp.Patches), "warnings", warnings)
	return resp
}

func main() {
	var (
		host, certFile, keyFile, pullPolicy, cpuRequest, memRequest, cpuLimit, memLimit string
		port                                                                            int
		s                                                                               Settings
	)
	// Defaults: the settings of the golden files (test/support/injection-settings.ts).
	flag.StringVar(&host, "host", "127.0.0.1", "address to serve HTTPS on")
	flag.IntVar(&port, "port", 9443, "port to serve HTTPS on")
	flag.StringVar(&certFile, "tls-cert-file", "tls.crt", "serving certificate (PEM)")
	flag.StringVar(&keyFile, "tls-key-file", "tls.key", "its private key (PEM)")
	flag.StringVar(&s.Image, "hook-image", "leaderhook.test/leaderhook:dev", "image of the release hook")
	flag.StringVar(&pullPolicy, "hook-image-pull-policy", "Never", "imagePullPolicy of the release hook")
	flag.StringVar(&s.Version, "version", "0.1.0", "value of the leaderhook.io/injected annotation")
	flag.Int64Var(&s.GracePeriodFloor, "grace-period-floor", 10, "terminationGracePeriodSeconds is never set below this")
	flag.Int64Var(&s.GracePeriodCap, "grace-period-cap", 0, "when > 0, terminationGracePeriodSeconds is never left above this")
	flag.StringVar(&cpuRequest, "hook-cpu-request", "10m", "")
	flag.StringVar(&memRequest, "hook-memory-request", "48Mi", "")
	flag.StringVar(&cpuLimit, "hook-cpu-limit", "", "")
	flag.StringVar(&memLimit, "hook-memory-limit", "96Mi", "")
	flag.BoolVar(&s.Observe, "observe", false, "observe mode for the hook")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	s.ImagePullPolicy = corev1.PullPolicy(pullPolicy)
	for _, r := range []struct {
		value string
		list  *corev1.ResourceList
		name  corev1.ResourceName
	}{
		{cpuRequest, &s.Resources.Requests, corev1.ResourceCPU},
		{memRequest, &s.Resources.Requests, corev1.ResourceMemory},
		{cpuLimit, &s.Resources.Limits, corev1.ResourceCPU},
		{memLimit, &s.Resources.Limits, corev1.ResourceMemory},
	} {
		if r.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.value)
		if err != nil {
			fmt.Fprintf(os.Stderr, "--hook-%s: %v\n", r.name, err)
			os.Exit(2)
		}
		if *r.list == nil {
			*r.list = corev1.ResourceList{}
		}
		(*r.list)[r.name] = q
	}

	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	// As kubebuilder scaffolds it: HTTP/2 off (CVE-2023-44487, CVE-2023-39325).
	disableHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	server := webhook.NewServer(webhook.Options{
		Host:     host,
		Port:     port,
		CertDir:  filepath.Dir(certFile),
		CertName: filepath.Base(certFile),
		KeyName:  filepath.Base(keyFile),
		TLSOpts:  []func(*tls.Config){disableHTTP2},
	})
	if filepath.Dir(keyFile) != filepath.Dir(certFile) {
		fmt.Fprintln(os.Stderr, "--tls-cert-file and --tls-key-file must be in the same directory (controller-runtime's CertDir)")
		os.Exit(2)
	}
	server.Register("/mutate", &webhook.Admission{Handler: &podInjector{decoder: admission.NewDecoder(scheme), settings: s}})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("serving", "host", host, "port", port)
	if err := server.Start(ctx); err != nil {
		log.Error(err, "webhook server")
		os.Exit(1)
	}
}
