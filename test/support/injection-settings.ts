import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
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

const goldenDir = path.join(import.meta.dirname, '../testdata/inject');

/**
 * The settings golden case `name` was written with: goldenSettings, overridden
 * by NAME.settings.yaml in `dir` (the pod goldens' by default) if present.
 */
export function settingsFor(name: string, dir = goldenDir): InjectionSettings {
  const file = path.join(dir, `${name}.settings.yaml`);
  return existsSync(file) ? { ...goldenSettings, ...parse(readFileSync(file, 'utf8')) } : goldenSettings;
}
