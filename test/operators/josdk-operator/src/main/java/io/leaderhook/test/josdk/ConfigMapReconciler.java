package io.leaderhook.test.josdk;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.javaoperatorsdk.operator.api.config.informer.Informer;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;

/**
 * The operator's one controller, because JOSDK starts no operator without one: it watches the
 * ConfigMaps of its own namespace labelled leaderhook.test/josdk-operator (the scaffold Roles
 * of test/operators/rbac.yaml allow list and watch there) and only logs them. Like every JOSDK
 * controller under leader election, its informer runs on every replica and it reconciles only
 * on the leader.
 */
// The namespace is set at registration (Main): the operator's own, which it reads as the Go
// operators do; JOSDK's WATCH_CURRENT_NAMESPACE would ask fabric8's configuration instead.
@ControllerConfiguration(name = "configmaps", informer = @Informer(labelSelector = ConfigMapReconciler.LABEL))
final class ConfigMapReconciler implements Reconciler<ConfigMap> {
  static final String LABEL = "leaderhook.test/josdk-operator";
  private final Log log;

  ConfigMapReconciler(Log log) {
    this.log = log;
  }

  @Override
  public UpdateControl<ConfigMap> reconcile(ConfigMap cm, Context<ConfigMap> context) {
    log.info("reconciled", "configMap", cm.getMetadata().getName());
    return UpdateControl.noUpdate();
  }
}
