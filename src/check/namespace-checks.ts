/**
 * The checks of one opted-in namespace: the webhook injects a pod created
 * there (a server-side dry run: nothing is stored, nothing runs), the hook
 * may do what it must as each ServiceAccount the pods run as, the pods carry
 * the hook, and the nodes that run them can get its image.
 */
import type { V1Node, V1SubjectAccessReview } from '@kubernetes/client-node';
import { annotations } from '../annotations.ts';
import { errorMessage } from '../error-message.ts';
import type { Pod, Wire } from '../kube/types.ts';
import { NONROOT_UID } from '../nonroot-user.ts';
import { apiPaths, type CheckApi, listAll, remedyForError, statusOf } from './api.ts';
import { describePermission, hookPermissions, subjectAccessReview } from './hook-permissions.ts';
import { REQUIRE_POD_NAME_WEBHOOK } from './registration.ts';
import { type CheckResult, failed, listSome, passed } from './report.ts';
import {
  hookContainerOf,
  hookPullFailures,
  nodeListsImage,
  operatorNodes,
  type PullCause,
  type PullFailure,
  pullErrorText,
  pullFailureCause,
  registryOf,
  serviceAccountsOf,
  uninjectedPods,
} from './workload-pods.ts';

/** What the probe pod is called; a dry run stores nothing, so the name is only for the API server's log. */
const PROBE_GENERATE_NAME = 'leaderhook-check-';
/** The Role deploy/operator-rbac/role.yaml grants the hook in an operator's namespace. */
const HOOK_ROLE = 'leaderhook-release';
/** Never pulled (a dry run starts nothing): any image an admission policy is likely to allow. */
const PROBE_IMAGE = 'registry.k8s.io/pause:3.10';

/**
 * A pod that passes Pod Security "restricted" and a ResourceQuota that
 * demands limits, and that lacks POD_NAME, as the operators leaderhook
 * serves: what the webhook must inject in every opted-in namespace.
 */
function probePod(namespace: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: PROBE_GENERATE_NAME, namespace },
    spec: {
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: NONROOT_UID, runAsGroup: NONROOT_UID, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'probe',
          image: PROBE_IMAGE,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          resources: { requests: { cpu: '1m', memory: '8Mi' }, limits: { cpu: '10m', memory: '16Mi' } },
        },
      ],
    },
  };
}

export interface HookImage {
  image: string;
  imagePullPolicy: string;
}

export async function checkDryRunPod(api: CheckApi, namespace: string, webhookNamespace: string): Promise<{ result: CheckResult; hook?: HookImage }> {
  const title = `namespace ${namespace}: dry-run pod`;
  let created: Pod;
  try {
    created = await api.post(apiPaths.pods(namespace), probePod(namespace), { dryRun: 'All' });
  } catch (error) {
    const message = errorMessage(error);
    const remedy = message.includes(REQUIRE_POD_NAME_WEBHOOK)
      ? 'the webhook did not answer, and this namespace is required: pods without POD_NAME are refused until it does; mend the checks above first'
      : remedyForError(error, `create pods in ${namespace}`);
    return { result: failed(title, `refused: ${message}`, remedy) };
  }
  const hook = hookContainerOf(created);
  const injected = created.metadata?.annotations?.[annotations.injected];
  if (hook && injected !== undefined) {
    return { result: passed(title, `comes back injected by leaderhook ${injected}, hook image ${hook.image}`), hook };
  }
  return {
    result: failed(
      title,
      'comes back without the release hook: the API server did not call the webhook, or ignored its failure (failurePolicy Ignore)',
      `mend the checks above first, then read the webhook's log (kubectl -n ${webhookNamespace} logs -l app.kubernetes.io/component=webhook) and the API server's, which names failed calls to inject.leaderhook.io`,
    ),
  };
}

export async function checkPermissions(api: CheckApi, namespace: string, pods: readonly Pod[]): Promise<CheckResult[]> {
  const accounts = serviceAccountsOf(pods);
  if (accounts.length === 0) {
    return [passed(`namespace ${namespace}: hook permissions`, 'no pods yet: bind the Role to the ServiceAccount your operator will run as')];
  }
  return Promise.all(
    accounts.map(async (account) => {
      const title = `namespace ${namespace}: hook permissions of ServiceAccount ${account}`;
      let reviews: Wire<V1SubjectAccessReview>[];
      try {
        reviews = await Promise.all(
          hookPermissions.map((p) => api.post<Wire<V1SubjectAccessReview>>(apiPaths.subjectAccessReviews(), subjectAccessReview(namespace, account, p))),
        );
      } catch (error) {
        return failed(title, `cannot ask the API server: ${errorMessage(error)}`, remedyForError(error, 'create subjectaccessreviews'));
      }
      const missing = hookPermissions.filter((_, i) => reviews[i]?.status?.allowed !== true).map(describePermission);
      if (missing.length === 0) return passed(title, `all ${hookPermissions.length} permissions the hook needs`);
      return failed(
        title,
        `lacks ${missing.join(', ')}: its hook releases less or nothing, and the garbage collector stays in charge`,
        `kubectl apply -n ${namespace} -f deploy/operator-rbac/role.yaml && kubectl create rolebinding -n ${namespace} ${HOOK_ROLE}-${account} --role=${HOOK_ROLE} --serviceaccount=${namespace}:${account}`,
      );
    }),
  );
}

export function checkInjectedPods(namespace: string, pods: readonly Pod[]): CheckResult {
  const title = `namespace ${namespace}: pods injected`;
  const missing = uninjectedPods(pods);
  if (missing.length === 0) return passed(title, pods.length === 0 ? 'no pods yet' : `every pod that has not finished carries ${annotations.injected}`);
  return failed(
    title,
    `${missing.length} pod${missing.length === 1 ? ' lacks' : 's lack'} ${annotations.injected} (created before the label or while the webhook was down): ${listSome(missing)}`,
    `re-create them: kubectl rollout restart -n ${namespace} deployment,statefulset (or delete the pods their controller re-creates)`,
  );
}

/** What each cause of a failed hook pull means, in the words of the check's line. */
const PULL_DIAGNOSES: Record<PullCause, (registry: string) => string> = {
  never: () => 'imagePullPolicy Never, and the node lacks the image',
  invalid: () => 'not a valid image name',
  unreachable: (registry) => `${registry} does not answer from the node`,
  untrusted: (registry) => `the node does not trust the certificate of ${registry}`,
  unauthorized: (registry) => `${registry} refuses the node's pull`,
  missing: (registry) => `${registry} has no such tag`,
  unknown: () => 'the pull failed',
};

/** What to do about each cause, for the images and registries of its failures. */
function pullRemedy(cause: PullCause, images: string[], registries: string[]): string {
  const image = listSome(images, 2);
  const registry = listSome(registries, 2);
  switch (cause) {
    case 'never':
      return 'load the image onto those nodes, or set LEADERHOOK_HOOK_IMAGE_PULL_POLICY=IfNotPresent on the webhook';
    case 'invalid':
      return 'set a valid image with images: of your overlay of deploy/ (Helm: image.repository and image.tag)';
    case 'unreachable':
      return `make ${registry} reachable from those nodes (is it running? DNS, firewall, proxy); the kubelet retries within 5 minutes, deleting the pods retries now`;
    case 'untrusted':
      return `make the nodes' container runtime trust the CA of ${registry} (containerd: ca = in certs.d/<host>/hosts.toml)`;
    case 'unauthorized':
      return `give the operator pods an imagePullSecret for ${registry}: the hook is pulled with the pod's own secrets`;
    case 'missing':
      return `push ${image} to ${registry} (a release: scripts/publish.sh RELEASE_DIR ${registry}), or set a tag it has with images: of your overlay of deploy/ (Helm: image.tag)`;
    case 'unknown':
      return "make the image pullable from those nodes (registry access, the pods' imagePullSecrets), or set one they can pull with images: of your overlay of deploy/";
  }
}

/** The ✗ line for hooks waiting on their image: which pods, why, and a remedy for each cause found. */
function hookPullFailed(title: string, failures: readonly PullFailure[]): CheckResult {
  const causes = failures.map((f) => pullFailureCause(f.reason, f.message));
  const where = failures.map((f, i) => {
    const text = pullErrorText(f.message);
    return `pod ${f.pod} on node ${f.node}: ${f.reason}, ${PULL_DIAGNOSES[causes[i]!](registryOf(f.image))}${text ? ` (${text})` : ''}`;
  });
  const images = [...new Set(failures.map((f) => f.image))];
  const remedies = [...new Set(causes)].map((cause) => {
    const matching = failures.filter((_, i) => causes[i] === cause);
    return pullRemedy(cause, [...new Set(matching.map((f) => f.image))], [...new Set(matching.map((f) => registryOf(f.image)))]);
  });
  return failed(
    title,
    `${failures.length} hook${failures.length === 1 ? '' : 's'} cannot get ${listSome(images, 2)}: ${listSome(where, 3)}`,
    remedies.join('; and '),
  );
}

/** The images a node reports, or undefined when the node cannot be read (no permission, gone). */
async function imagesOfNode(api: CheckApi, name: string): Promise<{ names?: string[] }[] | undefined> {
  try {
    return (await api.get<Wire<V1Node>>(apiPaths.node(name))).status?.images ?? [];
  } catch (error) {
    if (statusOf(error) === 403 || statusOf(error) === 404) return undefined;
    throw error;
  }
}

/**
 * Can the nodes that run this namespace's operators start the hook? As far
 * as the API shows: a hook already waiting on its image is proof it cannot;
 * a node's status.images (its 50 largest by default) listing the image is
 * proof it can; otherwise the pull policy must let the node pull it.
 */
export async function checkHookImagePull(
  api: CheckApi,
  namespace: string,
  pods: readonly Pod[],
  dryRunHook: HookImage | undefined,
): Promise<CheckResult | undefined> {
  const title = `namespace ${namespace}: hook image`;
  const hook = dryRunHook ?? pods.map(hookContainerOf).find((h) => h !== undefined);
  // No injected pod and no injected dry run: the dry-run line has said why; there is no image to look for.
  if (!hook) return undefined;
  const failures = hookPullFailures(pods);
  if (failures.length > 0) return hookPullFailed(title, failures);
  const nodes = operatorNodes(pods);
  if (nodes.length === 0) return passed(title, `${hook.image}: no pod of this namespace runs on a node yet`);
  let images: ({ names?: string[] }[] | undefined)[];
  try {
    images = await Promise.all(nodes.map((n) => imagesOfNode(api, n)));
  } catch (error) {
    return failed(title, errorMessage(error), remedyForError(error, 'get nodes'));
  }
  const holding = nodes.filter((_, i) => nodeListsImage(images[i], hook.image));
  const others = nodes.filter((n) => !holding.includes(n));
  const have = holding.length > 0 ? `on node${holding.length === 1 ? '' : 's'} ${listSome(holding)}` : '';
  if (others.length === 0) return passed(title, `${hook.image} ${have}`);
  if (hook.imagePullPolicy === 'Never') {
    return failed(
      title,
      `${hook.image} is not listed by node${others.length === 1 ? '' : 's'} ${listSome(others)}, and its imagePullPolicy is Never: injected pods there stay at Init`,
      'load the image onto those nodes, or set LEADERHOOK_HOOK_IMAGE_PULL_POLICY=IfNotPresent on the webhook',
    );
  }
  const rest = `node${others.length === 1 ? '' : 's'} ${listSome(others)} will pull it (imagePullPolicy ${hook.imagePullPolicy}; whether the registry lets them, only a pull shows)`;
  return passed(title, `${hook.image} ${have ? `${have}; ` : ''}${rest}`);
}

/** Every pod of the namespace, for the checks that read pods. */
export function listPods(api: CheckApi, namespace: string): Promise<Pod[]> {
  return listAll<Pod>(api, apiPaths.pods(namespace));
}
