import type { Logger } from '../line-log.ts';
import { errorMessage } from '../error-message.ts';
import type { KubeClient } from '../kube/client.ts';
import { REQUEST_TIMEOUT_MS } from './request-timeout.ts';

/** What the hook needs in its own namespace (docs/design.md#what-the-hook-needs), and what it cannot do without each. */
export const requiredPermissions = [
  { group: '', resource: 'configmaps', verbs: ['get', 'list', 'watch', 'delete'] },
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'list', 'watch', 'update', 'delete'] },
  { group: '', resource: 'pods', verbs: ['get', 'list', 'watch'] },
  { group: '', resource: 'events', verbs: ['create'] },
] as const;

/** `resource/verb` → allowed. A check that could not be made counts as allowed (we try, and log failures then). */
export type Permissions = Map<string, boolean>;

export const permissionKey = (resource: string, verb: string) => `${resource}/${verb}`;

export function can(perms: Permissions | undefined, resource: string, verb: string): boolean {
  return perms?.get(permissionKey(resource, verb)) ?? true;
}

/**
 * What the hook knows of its permissions: nothing until the start's access
 * reviews answer (everything counts as allowed, and failures are logged
 * then), and from then on their answers. Only the start learns them; every
 * other part only asks.
 */
export class KnownPermissions {
  #perms: Permissions | undefined;

  constructor(perms?: Permissions) {
    this.#perms = perms;
  }

  /** The reviews' answers, once they came. */
  get answered(): Permissions | undefined {
    return this.#perms;
  }

  learn(perms: Permissions): void {
    this.#perms = perms;
  }

  can(resource: string, verb: string): boolean {
    return can(this.#perms, resource, verb);
  }
}

/**
 * One SelfSubjectAccessReview per verb, in parallel, at start. Missing
 * permissions are logged in one line with what they disable; the hook keeps
 * running with what it has.
 */
export async function checkPermissions(client: KubeClient, namespace: string, logger: Logger): Promise<Permissions> {
  const perms: Permissions = new Map();
  const checks = requiredPermissions.flatMap((p) => p.verbs.map((verb) => ({ group: p.group, resource: p.resource, verb })));
  /** Checks that could not be made, by error message: the same failure (API down, a denied review) is one log line. */
  const failures = new Map<string, { err: unknown; failed: string[] }>();
  await Promise.all(
    checks.map(async ({ group, resource, verb }) => {
      try {
        const review = await client.createSelfSubjectAccessReview(
          {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: { namespace, group, resource, verb } },
          },
          { timeoutMs: REQUEST_TIMEOUT_MS },
        );
        perms.set(permissionKey(resource, verb), review.status?.allowed === true);
      } catch (err) {
        const key = errorMessage(err);
        const entry = failures.get(key) ?? { err, failed: [] };
        entry.failed.push(`${resource}/${verb}`);
        failures.set(key, entry);
      }
    }),
  );
  const missing = checks.filter((c) => perms.get(permissionKey(c.resource, c.verb)) === false).map((c) => `${c.resource} ${c.verb}`);
  for (const { err, failed } of failures.values()) {
    logger.warn({ err, failed }, 'could not check some permissions; trying anyway');
  }
  if (missing.length > 0) {
    logger.warn(
      { missing, effects: permissionEffects(perms) },
      `missing permissions in namespace ${namespace}: ${missing.join(', ')}; running with what is allowed (see deploy/operator-rbac)`,
    );
  } else if (failures.size === 0) {
    logger.info({}, 'all permissions present');
  }
  return perms;
}

/** Human consequences of what is missing, for the log line. */
export function permissionEffects(perms: Permissions): string[] {
  const effects: string[] = [];
  if (!can(perms, 'configmaps', 'list') || !can(perms, 'configmaps', 'watch')) {
    effects.push('ConfigMap locks are not watched: no R0/R2/R3 releases, own lock found only when pinned by annotation');
  }
  if (!can(perms, 'configmaps', 'delete')) effects.push('ConfigMap locks cannot be released');
  if (!can(perms, 'configmaps', 'get')) effects.push('a pinned ConfigMap lock cannot be read on SIGTERM');
  if (!can(perms, 'leases', 'list') || !can(perms, 'leases', 'watch')) effects.push('Leases are not watched: own Leases found by a list on SIGTERM only');
  if (!can(perms, 'leases', 'get') || !can(perms, 'leases', 'update')) effects.push('Leases cannot be released');
  if (!can(perms, 'leases', 'delete')) effects.push('Leases owned by a pod cannot be released: garbage collection frees them');
  if (!can(perms, 'pods', 'get')) effects.push('no release at all: every release needs a live read of the pod');
  if (!can(perms, 'pods', 'list')) effects.push('Leases held by identity are never released: no pod list proves their hostname unique');
  if (!can(perms, 'pods', 'watch')) effects.push('holder pods are re-checked only every wait-report interval');
  if (!can(perms, 'events', 'create')) effects.push('no Events: releases and waits are only logged');
  return effects;
}
