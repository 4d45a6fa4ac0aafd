package main

// The mutation leaderhook's src/injector/index.ts makes, written the way a
// controller-runtime webhook would: on the typed corev1.Pod the decoder
// returns. Every rule, string and order of warnings follows index.ts; where
// this file differs, the comparison test says why.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	hookContainerName         = "leaderhook-release"
	hookTokenVolumeName       = "leaderhook-api-access"
	serviceAccountMountPath   = "/var/run/secrets/kubernetes.io/serviceaccount"
	mirrorPodAnnotation       = "kubernetes.io/config.mirror"
	tokenExpirationSeconds    = int64(3607)
	defaultGracePeriod        = int64(30)
	injectAnnotation          = "leaderhook.io/inject"
	injectedAnnotation        = "leaderhook.io/injected"
	gracePeriodAnnotation     = "leaderhook.io/termination-grace-period-seconds"
	hookCPURequestAnnotation  = "leaderhook.io/hook-cpu-request"
	hookMemRequestAnnotation  = "leaderhook.io/hook-memory-request"
	hookCPULimitAnnotation    = "leaderhook.io/hook-cpu-limit"
	hookMemLimitAnnotation    = "leaderhook.io/hook-memory-limit"
	hookMetricsPortAnnotation = "leaderhook.io/hook-metrics-port"
	observeAnnotation         = "leaderhook.io/observe"
	hookMetricsPortName       = "hook-metrics"
)

// Settings are the webhook's flags, as InjectionSettings in src/injector/types.ts.
type Settings struct {
	Image            string
	ImagePullPolicy  corev1.PullPolicy
	Version          string
	GracePeriodFloor int64
	GracePeriodCap   int64 // 0: no cap
	Resources        corev1.ResourceRequirements
	Observe          bool
}

// skipReason says why a pod is left alone, or "" when it is injected.
func skipReason(pod *corev1.Pod) string {
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return "mirrorPod"
	}
	if pod.Labels[injectAnnotation] == "false" || pod.Annotations[injectAnnotation] == "false" {
		return "optedOut"
	}
	return ""
}

// injectPod mutates pod in place and returns the warnings for the user.
func injectPod(pod *corev1.Pod, s Settings) []string {
	var warnings []string
	for i := range pod.Spec.Containers {
		warnings = addDownwardEnv(&pod.Spec.Containers[i], warnings)
	}
	warnings = addReleaseHook(pod, s, warnings)
	warnings = adjustGracePeriod(pod, s, warnings)
	if pod.Spec.HostNetwork {
		warnings = append(warnings, "leaderhook: hostNetwork pod: its Leases cannot name it, so only its ConfigMap locks are released early")
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[injectedAnnotation] = s.Version
	return warnings
}

func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath}}}
}

func addDownwardEnv(c *corev1.Container, warnings []string) []string {
	var added []string
	for _, wanted := range []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace")} {
		var existing *corev1.EnvVar
		for i := range c.Env {
			if c.Env[i].Name == wanted.Name {
				existing = &c.Env[i]
				break
			}
		}
		switch {
		case existing == nil:
			c.Env = append(c.Env, wanted)
			added = append(added, wanted.Name)
		case existing.ValueFrom == nil || existing.ValueFrom.FieldRef == nil || existing.ValueFrom.FieldRef.FieldPath != wanted.ValueFrom.FieldRef.FieldPath:
			warnings = append(warnings, fmt.Sprintf("leaderhook: container \"%s\": %s is not %s; kept as set", c.Name, wanted.Name, wanted.ValueFrom.FieldRef.FieldPath))
		}
	}
	if len(added) > 0 && len(c.EnvFrom) > 0 {
		warnings = append(warnings, fmt.Sprintf("leaderhook: container \"%s\": injected %s take precedence over envFrom", c.Name, strings.Join(added, ", ")))
	}
	return warnings
}

func addReleaseHook(pod *corev1.Pod, s Settings, warnings []string) []string {
	var others []corev1.Container
	var hook *corev1.Container
	for i := range pod.Spec.InitContainers {
		c := pod.Spec.InitContainers[i]
		if c.Name != hookContainerName {
			others = append(others, c)
		} else if hook == nil {
			hook = &c
		}
	}
	if hook == nil {
		hook = &corev1.Container{}
	}
	// Fields the API server defaulted on an earlier round stay; the ones
	// leaderhook owns are rendered again from the settings.
	always := corev1.ContainerRestartPolicyAlways
	resources, warnings := hookResources(pod, s.Resources, warnings)
	env := []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"), fieldEnv("POD_UID", "metadata.uid")}
	if s.Observe {
		env = append(env, corev1.EnvVar{Name: "LEADERHOOK_OBSERVE", Value: "true"})
		if value, ok := pod.Annotations[observeAnnotation]; ok && !observeOn.MatchString(strings.TrimSpace(value)) {
			warnings = append(warnings, fmt.Sprintf("leaderhook: ignoring %s: \"%s\": observe mode is set for all pods; a pod cannot turn it off", observeAnnotation, value))
		}
	}
	// The hook's ports are leaderhook's: none unless the pod asks for metrics.
	hook.Ports = nil
	port, warnings := hookMetricsPort(pod, warnings)
	if port > 0 {
		env = append(env, corev1.EnvVar{Name: "LEADERHOOK_METRICS_PORT", Value: strconv.Itoa(int(port))})
		p := corev1.ContainerPort{Name: hookMetricsPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}
		if pod.Spec.HostNetwork {
			p.HostPort = port
		}
		hook.Ports = []corev1.ContainerPort{p}
	}
	hook.Name = hookContainerName
	hook.Image = s.Image
	hook.ImagePullPolicy = s.ImagePullPolicy
	hook.Args = []string{"release"}
	hook.Env = env
	hook.RestartPolicy = &always
	hook.Resources = resources
	hook.SecurityContext = &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(int64(65532)),
		RunAsGroup:               ptr(int64(65532)),
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	hook.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	hook.VolumeMounts = []corev1.VolumeMount{{Name: hookTokenVolumeName, MountPath: serviceAccountMountPath, ReadOnly: true}}
	pod.Spec.InitContainers = append(others, *hook)

	volume := tokenVolume()
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == hookTokenVolumeName {
			pod.Spec.Volumes[i] = volume
			return warnings
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
	return warnings
}

func tokenVolume() corev1.Volume {
	return corev1.Volume{
		Name: hookTokenVolumeName,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr(int32(0o444)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(tokenExpirationSeconds)}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
				}}},
			},
		}},
	}
}

// quantity is src/injector's isResourceQuantity: stricter than
// resource.ParseQuantity, so both webhooks refuse the same values.
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]+)?$`)

// guaranteedHookCPU is src/injector's GUARANTEED_HOOK_CPU.
var guaranteedHookCPU = resource.MustParse("100m")

// hasGuaranteedResources is src/injector/qos.ts' hasGuaranteedResources.
func hasGuaranteedResources(r corev1.ResourceRequirements) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		limit, ok := r.Limits[name]
		if !ok || limit.Sign() <= 0 {
			return false
		}
		if request, ok := r.Requests[name]; ok && request.Cmp(limit) != 0 {
			return false
		}
	}
	return true
}

// isGuaranteed is src/injector/qos.ts' isGuaranteed over the pod's
// containers and init containers other than the hook; a pod with
// pod-level resources is not asked about.
func isGuaranteed(pod *corev1.Pod) bool {
	if pod.Spec.Resources != nil {
		return false
	}
	n := 0
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == hookContainerName {
			continue
		}
		n++
		if !hasGuaranteedResources(c.Resources) {
			return false
		}
	}
	return n > 0
}

// guaranteedDefaults is src/injector's guaranteedDefaults.
func guaranteedDefaults(defaults corev1.ResourceRequirements) (corev1.ResourceRequirements, bool) {
	memory, ok := defaults.Limits[corev1.ResourceMemory]
	if !ok {
		if memory, ok = defaults.Requests[corev1.ResourceMemory]; !ok {
			return defaults, false
		}
	}
	cpu, ok := defaults.Limits[corev1.ResourceCPU]
	if !ok {
		cpu = guaranteedHookCPU
	}
	r := *defaults.DeepCopy()
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	r.Requests[corev1.ResourceCPU], r.Requests[corev1.ResourceMemory] = cpu, memory
	r.Limits[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory] = cpu, memory
	return r, true
}

func hookResources(pod *corev1.Pod, defaults corev1.ResourceRequirements, warnings []string) (corev1.ResourceRequirements, []string) {
	guaranteed := isGuaranteed(pod)
	r := *defaults.DeepCopy()
	if guaranteed {
		if g, ok := guaranteedDefaults(defaults); ok {
			r = g
		}
	}
	overrides := []struct {
		annotation string
		limits     bool
		name       corev1.ResourceName
	}{
		{hookCPURequestAnnotation, false, corev1.ResourceCPU},
		{hookMemRequestAnnotation, false, corev1.ResourceMemory},
		{hookCPULimitAnnotation, true, corev1.ResourceCPU},
		{hookMemLimitAnnotation, true, corev1.ResourceMemory},
	}
	for _, o := range overrides {
		value, ok := pod.Annotations[o.annotation]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if !quantity.MatchString(value) || err != nil {
			warnings = append(warnings, fmt.Sprintf("leaderhook: ignoring %s: \"%s\" is not a quantity (like 50m, 64Mi)", o.annotation, value))
			continue
		}
		list := &r.Requests
		if o.limits {
			list = &r.Limits
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[o.name] = q
	}
	if guaranteed && !hasGuaranteedResources(r) {
		warnings = append(warnings, "leaderhook: this Guaranteed pod becomes Burstable: the release hook's requests and limits differ")
	}
	return r, warnings
}

// observeOn is src/annotations.ts' observeAnnotationIsOn, on a trimmed value.
var observeOn = regexp.MustCompile(`(?i)^(true|1|yes)$`)

var portNumber = regexp.MustCompile(`^[0-9]{1,5}$`)

// hookMetricsPort is the port the pod's annotation asks the hook to serve
// metrics on, or 0 when none, or one another container declares.
func hookMetricsPort(pod *corev1.Pod, warnings []string) (int32, []string) {
	value, ok := pod.Annotations[hookMetricsPortAnnotation]
	if !ok {
		return 0, warnings
	}
	port := 0
	if portNumber.MatchString(value) {
		port, _ = strconv.Atoi(value)
	}
	if port < 1 || port > 65535 {
		return 0, append(warnings, fmt.Sprintf("leaderhook: ignoring %s: \"%s\" is not a port number (1-65535)", hookMetricsPortAnnotation, value))
	}
	others := append([]corev1.Container{}, pod.Spec.Containers...)
	for _, c := range pod.Spec.InitContainers {
		if c.Name != hookContainerName {
			others = append(others, c)
		}
	}
	for _, c := range others {
		for _, p := range c.Ports {
			if int(p.ContainerPort) == port {
				return 0, append(warnings, fmt.Sprintf("leaderhook: ignoring %s: container \"%s\" already uses port %d", hookMetricsPortAnnotation, c.Name, port))
			}
		}
		for _, p := range c.Ports {
			if p.Name == hookMetricsPortName {
				return 0, append(warnings, fmt.Sprintf("leaderhook: ignoring %s: container \"%s\" already has a port named %s", hookMetricsPortAnnotation, c.Name, hookMetricsPortName))
			}
		}
	}
	if port < 1024 {
		warnings = append(warnings, fmt.Sprintf("leaderhook: hook metrics port %d is below 1024: the hook runs without root or capabilities and may not get it", port))
	}
	return int32(port), warnings
}

var wholeSeconds = regexp.MustCompile(`^[0-9]{1,9}$`)

func adjustGracePeriod(pod *corev1.Pod, s Settings, warnings []string) []string {
	current := defaultGracePeriod
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		current = *pod.Spec.TerminationGracePeriodSeconds
	}
	wanted, why := current, ""
	if requested, ok := pod.Annotations[gracePeriodAnnotation]; ok {
		if wholeSeconds.MatchString(requested) {
			wanted, _ = strconv.ParseInt(requested, 10, 64)
			why = "as annotated"
			if wanted < s.GracePeriodFloor {
				warnings = append(warnings, fmt.Sprintf("leaderhook: annotated grace period %ds is below the %ds floor; the lock may wait for GC", wanted, s.GracePeriodFloor))
			} else if s.GracePeriodCap > 0 && wanted > s.GracePeriodCap {
				warnings = append(warnings, fmt.Sprintf("leaderhook: annotated grace period %ds is above the %ds cap; capped to it", wanted, s.GracePeriodCap))
			}
		} else {
			warnings = append(warnings, fmt.Sprintf("leaderhook: ignoring %s: \"%s\" is not whole seconds", gracePeriodAnnotation, requested))
		}
	}
	if why == "" && wanted < s.GracePeriodFloor {
		wanted, why = s.GracePeriodFloor, "floor: the release hook needs time after the operator stops"
	}
	// The cap wins over the annotation too (docs/security.md).
	if s.GracePeriodCap > 0 && wanted > s.GracePeriodCap {
		wanted, why = s.GracePeriodCap, "cap: a stuck operator must not delay failover"
	}
	if wanted != current {
		pod.Spec.TerminationGracePeriodSeconds = &wanted
		warnings = append(warnings, fmt.Sprintf("leaderhook: terminationGracePeriodSeconds %ds -> %ds (%s)", current, wanted, why))
	}
	return warnings
}

func ptr[T any](v T) *T { return &v }
