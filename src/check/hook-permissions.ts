/**
 * The hook's permissions as another user sees them: a SubjectAccessReview
 * per permission for the ServiceAccount a pod runs as, the way the API
 * server would authorize that pod's hook. The list is the one the hook
 * itself checks at start (src/releaser/permissions.ts), which
 * deploy/operator-rbac/role.yaml grants.
 */
import type { V1SubjectAccessReview } from '@kubernetes/client-node';
import { requiredPermissions } from '../releaser/permissions.ts';

export interface HookPermission {
  group: string;
  resource: string;
  verb: string;
}

/** Every (group, resource, verb) the hook needs, one by one. */
export const hookPermissions: readonly HookPermission[] = requiredPermissions.flatMap((p) =>
  p.verbs.map((verb) => ({ group: p.group, resource: p.resource, verb })),
);

export function describePermission(p: HookPermission): string {
  return `${p.group ? `${p.resource}.${p.group}` : p.resource} ${p.verb}`;
}

/**
 * The review that asks whether `serviceAccount` of `namespace` may do `p`
 * there, with the groups the API server gives every ServiceAccount token, so
 * a Role bound to `system:serviceaccounts:<ns>` counts too.
 */
export function subjectAccessReview(namespace: string, serviceAccount: string, p: HookPermission): V1SubjectAccessReview {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: `system:serviceaccount:${namespace}:${serviceAccount}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      resourceAttributes: { namespace, group: p.group, resource: p.resource, verb: p.verb },
    },
  };
}
