package main

import (
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/util"
)

// preflight asks the API server once, before any informer or leader election
// starts (both would only log their errors and retry forever), whether it
// answers and serves the cert-manager.io resources these controllers need.
func preflight(config *rest.Config, kubeconfig string) error {
	config = rest.CopyConfig(config)
	config.Timeout = 10 * time.Second
	client, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return fmt.Errorf("API client for %s (kubeconfig %s): %w", config.Host, kubeconfig, err)
	}
	if _, err := client.ServerVersion(); err != nil {
		return fmt.Errorf("reaching the API server %s (kubeconfig %s): %w", config.Host, kubeconfig, err)
	}
	groupVersion := cmapi.SchemeGroupVersion.String()
	resources, err := client.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the API server %s does not serve %s: install cert-manager %s's CRDs first (its module's deploy/crds)", config.Host, groupVersion, util.AppVersion)
	}
	if err != nil {
		return fmt.Errorf("listing %s resources on %s: %w", groupVersion, config.Host, err)
	}
	for _, name := range []string{"issuers", "certificates", "certificaterequests"} {
		if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == name }) {
			return fmt.Errorf("the API server %s serves no %s.%s: install cert-manager %s's CRDs first (its module's deploy/crds)", config.Host, name, cmapi.SchemeGroupVersion.Group, util.AppVersion)
		}
	}
	return nil
}
