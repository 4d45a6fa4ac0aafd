/**
 * What a process of this machine uses, from /proc: its memory
 * (/proc/PID/status) and CPU time (/proc/PID/stat). The hooks and webhooks the
 * tests and benchmarks start are such processes, and so are the local
 * cluster's containers (its nodes share this machine's /proc).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Memory of a process, in KiB. */
export interface ProcessMemory {
  /** VmRSS: every resident page, the shared code and files it mapped included. */
  rssKiB: number;
  /** RssAnon: its private memory (heap, stacks, Buffers), what it would cost again in another process. */
  anonKiB: number;
}

/** The memory of `pid` now, read in one go; throws where the process is gone. */
export function memoryOf(pid: number): ProcessMemory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssKiB: kib('VmRSS'), anonKiB: kib('RssAnon') };
}

/** The sockets a process holds open now (its connections: a hook's API server watches each keep one). */
export function socketsOf(pid: number): number {
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
    } catch {
      // closed between the listing and the read
    }
  }
  return sockets;
}

const clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU seconds a process has used so far (user + system), from /proc/PID/stat. */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}
