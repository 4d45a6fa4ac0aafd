/**
 * The permissions the check asks about for each ServiceAccount are the ones
 * the hook needs (src/releaser/permissions.ts), and deploy/operator-rbac's
 * Role grants exactly those: the remedy the check prints is enough.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { V1Role } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { describePermission, hookPermissions, subjectAccessReview } from '../../../src/check/hook-permissions.ts';

const role = parse(readFileSync(new URL('../../../deploy/operator-rbac/role.yaml', import.meta.url), 'utf8')) as V1Role;

describe('the hook permissions leaderhook check reviews', () => {
  it('are every rule of deploy/operator-rbac/role.yaml, one verb at a time, and nothing the Role does not grant', () => {
    const granted = (role.rules ?? []).flatMap((r) =>
      (r.apiGroups ?? []).flatMap((group) => (r.resources ?? []).flatMap((resource) => (r.verbs ?? []).map((verb) => `${group}/${resource}/${verb}`))),
    );
    assert.deepEqual(hookPermissions.map((p) => `${p.group}/${p.resource}/${p.verb}`).sort(), granted.sort());
    assert.equal(hookPermissions.length, 13);
  });

  it("asks as the ServiceAccount's token would authenticate: its user name and its groups", () => {
    const review = subjectAccessReview('ops', 'controller-manager', { group: 'coordination.k8s.io', resource: 'leases', verb: 'update' });
    assert.deepEqual(review.spec, {
      user: 'system:serviceaccount:ops:controller-manager',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ops', 'system:authenticated'],
      resourceAttributes: { namespace: 'ops', group: 'coordination.k8s.io', resource: 'leases', verb: 'update' },
    });
    assert.equal(describePermission({ group: 'coordination.k8s.io', resource: 'leases', verb: 'update' }), 'leases.coordination.k8s.io update');
    assert.equal(describePermission({ group: '', resource: 'configmaps', verb: 'delete' }), 'configmaps delete');
  });
});
