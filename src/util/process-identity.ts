import { readFileSync } from 'node:fs';

/**
 * Which process is which on this host. A pid alone does not say: the kernel hands a pid out again
 * once its process is gone, and in a container the next run's process is often PID 1 again, as the
 * last one was. A process is therefore named by its pid *and its start time* (field 22 of
 * `/proc/<pid>/stat`, clock ticks since the host booted), and a host's life by its boot id
 * (`/proc/sys/kernel/random/boot_id`): start times of another boot mean nothing. Where `/proc`
 * does not exist (macOS, Windows) both are null and only the pid is compared.
 */

/** A process of this host: its pid, and when it started (null: unknown, off Linux). */
export interface ProcessRef {
  readonly pid: number;
  readonly startTime: number | null;
}

let cachedBootId: string | null | undefined;

/** This boot of the host (null where the kernel does not say). */
export function bootId(): string | null {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      cachedBootId = null;
    }
  }
  return cachedBootId;
}

/** The state letter and start time of a process from /proc, or null when /proc does not show it. */
function procStat(pid: number): { state: string; startTime: number } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // pid (comm) state ppid ...: the command may hold spaces and parentheses, the fields after the
  // last ')' do not. Field 3 (state) is the first of them, field 22 (starttime) the 20th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const startTime = Number(fields[19]);
  return Number.isFinite(startTime) ? { state: fields[0] ?? '', startTime } : null;
}

/** When a process started, in clock ticks since boot; null when unknown (no /proc, no process). */
export function processStartTime(pid: number): number | null {
  return procStat(pid)?.startTime ?? null;
}

/** Whether a process with this pid exists on this host (a permission error means it does). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * What became of the process `ref` names: it `runs`; it is `gone` (no process has its pid); it
 * `exited` (a zombie, dead and waiting for its parent to reap it — in a container whose PID 1
 * reaps orphans late, one lingers for seconds); or its pid was `reused` by a process that started
 * at another time. A process /proc does not show (hidepid), or any process off Linux, is taken at
 * its pid's word.
 */
export function processFate(ref: ProcessRef): 'runs' | 'gone' | 'exited' | 'reused' {
  if (!processExists(ref.pid)) return 'gone';
  const stat = procStat(ref.pid);
  if (stat === null) return 'runs';
  if (stat.state === 'Z' || stat.state === 'X') return 'exited';
  return ref.startTime === null || stat.startTime === ref.startTime ? 'runs' : 'reused';
}

/** Whether the process `ref` names still runs (see {@link processFate}). */
export function processRuns(ref: ProcessRef): boolean {
  return processFate(ref) === 'runs';
}

/** This process. */
export function selfRef(): ProcessRef {
  return { pid: process.pid, startTime: processStartTime(process.pid) };
}

let supervisor: ProcessRef | null = null;

/**
 * Records the process that supervises this one (the CLI that relaunched it and follows it): a
 * lease this process takes names it, so that others can tell an owner whose supervisor is gone —
 * one about to end — from one that carries on.
 */
export function setSupervisor(ref: ProcessRef | null): void {
  supervisor = ref;
}

/** The process supervising this one, or null (see {@link setSupervisor}). */
export function supervisorRef(): ProcessRef | null {
  return supervisor;
}
