/**
 * The pod and namespace keys leaderhook reads or writes, in one place: the
 * webhook writes and reads them, the release hook reads lock and observe.
 * Nothing else lives here, so the hook loads no more than these strings.
 */
export const annotations = {
  inject: 'leaderhook.io/inject',
  injected: 'leaderhook.io/injected',
  gracePeriod: 'leaderhook.io/termination-grace-period-seconds',
  observe: 'leaderhook.io/observe',
  lock: 'leaderhook.io/lock',
  hookCpuRequest: 'leaderhook.io/hook-cpu-request',
  hookMemoryRequest: 'leaderhook.io/hook-memory-request',
  hookCpuLimit: 'leaderhook.io/hook-cpu-limit',
  hookMemoryLimit: 'leaderhook.io/hook-memory-limit',
} as const;
