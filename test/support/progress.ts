/**
 * A progress line with the time of day, for the long commands (the trial
 * benchmarks, test:matrix). Loads nothing else, so a command that runs
 * outside the cluster's network namespace can use it.
 */
export const say = (line: string): void => {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
};
