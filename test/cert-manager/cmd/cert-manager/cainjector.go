package main

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

const caInjectorLease = "cert-manager-cainjector-leader-election"

func runCAInjector(ctx context.Context, args []string) error {
	o, err := parseFlags("cainjector", args, "127.0.0.1:9404", nil)
	if err != nil {
		return err
	}
	config, err := o.setUp()
	if err != nil {
		return err
	}
	if err := preflight(config, o.kubeconfig); err != nil {
		return err
	}
	ctx = logf.NewContext(ctx, logf.Log, "cainjector")
	log := logf.FromContext(ctx)
	ctrl.SetLogger(log)

	ready := newReadyState("starting")
	health, err := listenHealth(o.healthAddr, ready)
	if err != nil {
		return err
	}

	// The scheme knows every injectable kind cainjector's package sets up,
	// enabled or not, since its setups name them all.
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(util.RestConfigWithUserAgent(config, "cainjector"), ctrl.Options{
		Scheme: scheme,
		// A read of a kind no watch caches fails instead of quietly starting
		// an informer for it.
		Cache: cache.Options{ReaderFailOnMissingInformer: true},
		// Secrets are read live, never cached whole: the reconcilers watch their
		// metadata only (cert-manager's cainjector does the same, for clusters
		// with many large Secrets).
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// No metrics listener, no controller-runtime probes: health.go serves
		// both commands' checks the same way.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                o.leaderElect,
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionID:              caInjectorLease,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}

	// leaderhook registers one MutatingWebhookConfiguration with
	// cert-manager.io/inject-ca-from; the other injectables (validating
	// webhooks, APIServices, CRD conversion) would only add watches.
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName: true,
		},
	})
	if err != nil {
		return fmt.Errorf("registering the injectors: %w", err)
	}

	// Ready once the informers the MutatingWebhookConfiguration reconciler
	// reads have synced: asking the cache for them returns the very
	// informers its watches use (created if it asks first) once synced.
	// Started only while the Lease is held, like the reconcilers (a Runnable
	// needs leader election unless it says otherwise).
	secretMetadata := &metav1.PartialObjectMetadata{}
	secretMetadata.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	watched := []client.Object{&admissionregv1.MutatingWebhookConfiguration{}, &cmapi.Certificate{}, secretMetadata}
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ready.notReady("waiting for informer caches")
		for _, obj := range watched {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("informer for %T: %w", obj, err)
			}
		}
		ready.ready()
		log.Info("ready: informer caches synced")
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if o.leaderElect {
		ready.notReady(fmt.Sprintf("waiting for the leader Lease %s/%s", o.leaderElectionNamespace, caInjectorLease))
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return health.serve(gctx, log) })
	g.Go(func() error {
		err := mgr.Start(gctx)
		if err == nil && ctx.Err() == nil {
			err = errors.New("the controller manager stopped on its own")
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return fmt.Errorf("running: %w", err)
	}
	log.Info("stopped")
	return nil
}
