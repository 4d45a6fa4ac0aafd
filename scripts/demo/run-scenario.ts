/**
 * The in-cluster half of `npm run demo` (scripts/demo/main.ts runs it through
 * test/cluster/in-netns.sh): installs leaderhook, runs the failover scenario
 * in the namespaces demo-with-leaderhook and demo-without-leaderhook, prints
 * the report and leaves everything running to look at.
 */
import { connectTestCluster } from '../../test/support/kube.ts';
import { installLeaderhook } from '../../test/support/leaderhook.ts';
import { report } from './report.ts';
import { runDemoScenario } from './scenario.ts';

connectTestCluster();

export const DEMO_NAMESPACES = { with: 'demo-with-leaderhook', without: 'demo-without-leaderhook' };

const say = (line: string) => process.stdout.write(`${line}\n`);
say('installing leaderhook (deploy/, 2 webhook replicas) and waiting until it injects pods');
await installLeaderhook({ debugLog: false });
const { outcomes } = await runDemoScenario(DEMO_NAMESPACES, say);
say('');
process.stdout.write(report(outcomes));
