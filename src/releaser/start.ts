/**
 * The hook's start: who it is, what it may do, and its own pod. Each step
 * waits for the API server as long as it takes and reports, not fails, what
 * is missing: the operator container may start before any of this is done.
 */
import { backoffDelay, sleep } from '../kube/backoff.ts';
import type { Pod } from '../kube/types.ts';
import { backgroundRequest, type HookContext } from './context.ts';
import type { EventRecorder } from './events.ts';
import { can, checkPermissions, type Permissions, permissionEffects, requiredPermissions } from './permissions.ts';
import { kopfIdentity } from './kopf-peering.ts';
import { ownIdentityNames } from './lease-identity.ts';

/** The downward-API identity a hook cannot run without, by option, environment variable and flag. */
const identity = [
  { option: 'podName', env: 'POD_NAME', flag: 'pod-name' },
  { option: 'podNamespace', env: 'POD_NAMESPACE', flag: 'pod-namespace' },
  { option: 'podUid', env: 'POD_UID', flag: 'pod-uid' },
] as const;

/**
 * Throws, naming each one empty, unless the pod's name, namespace and UID
 * are set. The one check of the identity: the command and every other caller
 * of runReleaser go through it.
 */
export function requirePodIdentity(options: { podName: string; podNamespace: string; podUid: string }): void {
  const missing = identity.filter((i) => !options[i.option]);
  if (missing.length === 0) return;
  throw new Error(
    `release hook: ${missing.map((i) => `${i.env} (--${i.flag})`).join(', ')} empty: the webhook injects POD_NAME, POD_NAMESPACE and POD_UID from the downward API; set them when running the hook by hand`,
  );
}

/** The SelfSubjectAccessReviews; when they cannot be made at all, the hook tries everything and logs what fails. */
export function checkPermissionsOrAssume(ctx: HookContext): Promise<Permissions | undefined> {
  return checkPermissions(ctx.client, ctx.ns, ctx.log).catch((err: unknown) => {
    ctx.log.warn({ err }, 'permission check failed; trying anyway');
    return undefined;
  });
}

/** Reads the own pod until it answers; undefined once the hook stops. */
export async function readOwnPod(ctx: HookContext): Promise<Pod | undefined> {
  for (let attempt = 1; !ctx.signal.aborted; attempt++) {
    try {
      return await ctx.client.getPod(ctx.ns, ctx.podName, backgroundRequest(ctx));
    } catch (err) {
      if (ctx.signal.aborted) return undefined;
      const delay = backoffDelay(attempt);
      ctx.log[attempt > 3 ? 'warn' : 'info']({ err, retryInMs: delay }, 'cannot read own pod yet; R0-R3 wait for it');
      await sleep(delay, ctx.signal);
    }
  }
  return undefined;
}

/** Missing permissions, where an administrator looks: a Warning Event on this pod and a metric, besides the log line. */
export async function reportMissingPermissions(ctx: HookContext, events: EventRecorder, ownPod: Pod): Promise<void> {
  const perms = ctx.perms.answered;
  if (!perms) return;
  const missing = requiredPermissions.flatMap((p) => p.verbs.filter((verb) => !can(perms, p.resource, verb)).map((verb) => ({ resource: p.resource, verb })));
  if (missing.length === 0) return;
  for (const m of missing) ctx.metrics.permissionMissing(m.resource, m.verb);
  const message =
    `The leaderhook release hook lacks ${missing.map((m) => `${m.resource} ${m.verb}`).join(', ')} in namespace ${ctx.ns}: ${permissionEffects(perms).join('; ')}. ` +
    `Bind the Role of deploy/operator-rbac to service account ${ownPod.spec?.serviceAccountName ?? 'default'}.`;
  await events.emit(ctx.self, 'ReleaseHookPermissionsMissing', 'Warning', message);
}

/** The start's log lines: the settings in force, and what the own pod rules out. */
export function logRunning(
  ctx: HookContext,
  pod: Pod,
  settings: { lockName: string | undefined; observe: boolean; marginSeconds: number; releaseTimeoutMs: number },
): void {
  if (pod.metadata?.uid !== ctx.podUid) {
    ctx.log.error({ liveUid: pod.metadata?.uid, podUid: ctx.podUid }, 'own pod has another UID than POD_UID: R1 will never release');
  }
  const { lockName, observe, marginSeconds, releaseTimeoutMs } = settings;
  const leaseIdentities = ownIdentityNames(pod, ctx.hostname);
  const kopf = kopfIdentity(pod);
  ctx.log.info(
    {
      lockName: lockName ?? '(discover)',
      observe,
      marginSeconds,
      releaseTimeoutMs,
      podUid: ctx.podUid,
      leaseIdentities,
      ...(kopf.identity ? { kopfIdentity: kopf.identity } : {}),
    },
    'release hook running',
  );
  // a kopf operator that names itself otherwise: say once why its entries are never released
  if (kopf.why) ctx.log.info({ kopfIdentity: null }, kopf.why);
  if (leaseIdentities.length === 0) {
    ctx.log.info({ hostNetwork: true }, "this pod's hostname is its node's, shared with other pods: no Lease is ever released as held by its identity");
  }
}
