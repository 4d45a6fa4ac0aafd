import type { InjectionSettings } from '../../src/injector/index.ts';

/** Settings the golden files were written with: the webhook's defaults, a fixed image and version. */
export const goldenSettings: InjectionSettings = {
  image: 'leaderhook.test/leaderhook:dev',
  imagePullPolicy: 'Never',
  version: '0.1.0',
  gracePeriodFloorSeconds: 10,
  resources: { requests: { cpu: '10m', memory: '48Mi' }, limits: { memory: '96Mi' } },
  observe: false,
};
