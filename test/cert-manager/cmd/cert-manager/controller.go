package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The Issuer types the issuers controller can set up (and so mark Ready);
	// each registers itself with pkg/issuer.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllerNames are the control loops a Certificate from a SelfSigned or CA
// Issuer goes through. Each package registers its constructor with
// pkg/controller when imported; naming the constants (rather than running
// everything registered) keeps ACME, Vault, Venafi, ClusterIssuers, the
// ingress and Gateway shims and their dependencies out of the binary.
var controllerNames = []string{
	issuers.ControllerName,         // Issuer Ready condition
	trigger.ControllerName,         // Certificate Issuing condition: missing, expiring or changed Secret
	keymanager.ControllerName,      // the next private key, in a temporary Secret
	requestmanager.ControllerName,  // a CertificateRequest for the next key
	approver.ControllerName,        // approves every CertificateRequest (no policy engine here)
	crselfsigned.CRControllerName,  // signs requests of SelfSigned Issuers
	crca.CRControllerName,          // signs requests of CA Issuers
	issuing.ControllerName,         // writes the signed certificate into the Certificate's Secret
	readiness.ControllerName,       // Certificate Ready condition
	revisionmanager.ControllerName, // prunes old CertificateRequests (revisionHistoryLimit)
}

const controllerLease = "cert-manager-controller"

// constructLoops builds every loop of controllerNames (each registers its
// informers with the factory's shared informer factories) before any starts,
// so that a failure leaves nothing running.
func constructLoops(factory *controller.ContextFactory) ([]controller.Interface, error) {
	known := controller.Known()
	loops := make([]controller.Interface, 0, len(controllerNames))
	for _, name := range controllerNames {
		construct, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("cert-manager %s registers no controller %q", moduleVersion(), name)
		}
		loop, err := construct(factory)
		if err != nil {
			return nil, fmt.Errorf("constructing controller %s: %w", name, err)
		}
		loops = append(loops, loop)
	}
	return loops, nil
}

func runController(ctx context.Context, args []string) error {
	var workers int
	o, err := parseFlags("controller", args, "127.0.0.1:9403", func(fs *flag.FlagSet) {
		fs.IntVar(&workers, "workers", 5, "workers per control loop")
	})
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

	ctx = logf.NewContext(ctx, logf.Log, "controller")
	log := logf.FromContext(ctx)
	ready := newReadyState("starting")
	health, err := listenHealth(o.healthAddr, ready)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return health.serve(ctx, log) })

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig: o.kubeconfig,
		// cert-manager's defaults.
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controller.IssuerOptions{
			// Where ClusterIssuers would keep their Secrets (cert-manager's
			// default); no ClusterIssuer controller runs here.
			ClusterResourceNamespace: "kube-system",
		},
	})
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}

	// runLoops constructs every control loop (which registers its informers with
	// the shared factories), starts the factories and marks the process ready
	// once their caches have synced. The loops stop when ctx ends.
	runLoops := func(ctx context.Context) error {
		base, err := factory.Build()
		if err != nil {
			return fmt.Errorf("building the controller context: %w", err)
		}
		constructed, err := constructLoops(factory)
		if err != nil {
			return err
		}
		loops, loopCtx := errgroup.WithContext(ctx)
		for i, loop := range constructed {
			loops.Go(func() error {
				if err := loop.Run(workers, loopCtx); err != nil {
					return fmt.Errorf("controller %s: %w", controllerNames[i], err)
				}
				return nil
			})
		}
		log.Info("controllers started", "controllers", controllerNames)
		// The HTTP-01 metadata informers and the Gateway API factory serve ACME
		// and the Gateway shim only, neither of which runs here.
		base.SharedInformerFactory.Start(loopCtx.Done())
		base.KubeSharedInformerFactory.Start(loopCtx.Done())
		ready.notReady("waiting for informer caches")
		synced := true
		for _, ok := range base.SharedInformerFactory.WaitForCacheSync(loopCtx.Done()) {
			synced = synced && ok
		}
		for _, ok := range base.KubeSharedInformerFactory.WaitForCacheSync(loopCtx.Done()) {
			synced = synced && ok
		}
		if synced {
			ready.ready()
			log.Info("ready: informer caches synced")
		}
		return loops.Wait()
	}

	if o.leaderElect {
		g.Go(func() error { return leadThen(ctx, o, factory, ready, runLoops) })
	} else {
		g.Go(func() error { return runLoops(ctx) })
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("stopped")
	return nil
}

// leadThen runs work while this process holds the Lease, and returns an error
// if the Lease is lost before ctx ends. On a clean stop it releases the Lease
// at once, so the next process need not wait for it to expire; as in
// cert-manager's own controller, the release does not wait for a loop that is
// still finishing an item, which a single test process can afford.
func leadThen(ctx context.Context, o *options, factory *controller.ContextFactory, ready *readyState, work func(context.Context) error) error {
	log := logf.FromContext(ctx, "leader-election")
	leCtx, err := factory.Build("leader-election")
	if err != nil {
		return fmt.Errorf("building the leader election client: %w", err)
	}
	id, err := leaderIdentity()
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.leaderElectionNamespace, controllerLease,
		leCtx.Client.CoreV1(), leCtx.Client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: leCtx.Recorder})
	if err != nil {
		return fmt.Errorf("leader Lease %s/%s: %w", o.leaderElectionNamespace, controllerLease, err)
	}
	// work failing while this process still leads must end the election
	// too, or the process would hold the Lease doing nothing.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	workErr := make(chan error, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            controllerLease,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				close(started)
				log.Info("leading", "lease", o.leaderElectionNamespace+"/"+controllerLease, "identity", id)
				err := work(leading)
				workErr <- err
				cancel()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election on %s/%s: %w", o.leaderElectionNamespace, controllerLease, err)
	}
	ready.notReady(fmt.Sprintf("waiting for the leader Lease %s/%s", o.leaderElectionNamespace, controllerLease))
	log.Info("waiting for the leader Lease", "lease", o.leaderElectionNamespace+"/"+controllerLease, "identity", id)
	// Run returns once runCtx ends or the Lease is lost; either way the
	// loops' context has ended.
	elector.Run(runCtx)
	select {
	case <-started:
	default:
		return nil // stopped before it ever led
	}
	select {
	case err := <-workErr:
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	case <-time.After(10 * time.Second):
		return errors.New("the controllers did not stop within 10 s of leaving the leader Lease")
	}
	if ctx.Err() == nil {
		ready.notReady("lost the leader Lease")
		return fmt.Errorf("lost the leader Lease %s/%s", o.leaderElectionNamespace, controllerLease)
	}
	return nil
}
