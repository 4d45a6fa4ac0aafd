/**
 * The pod and namespace keys leaderhook reads or writes, in one place: the
 * webhook writes and reads them, the release hook reads lock and observe.
 * Nothing else lives here but how both read observe's value, so the hook
 * loads no more than these strings and one regular expression.
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
  hookMetricsPort: 'leaderhook.io/hook-metrics-port',
} as const;

/**
 * Whether a value of `leaderhook.io/observe` turns observe mode on: true, 1
 * or yes, in any case. Any other value asks for it off, which a pod gets only
 * where the webhook does not run in observe mode (docs/security.md).
 */
export function observeAnnotationIsOn(value: string): boolean {
  return /^(true|1|yes)$/i.test(value.trim());
}
