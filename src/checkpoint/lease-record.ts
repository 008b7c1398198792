import { open } from 'node:fs/promises';
import { ErrorCode, MillraceError } from '../errors.js';
import { type ProcessRef, processFate } from '../util/process-identity.js';
import { verifyChecksum, withChecksum } from './files.js';

/**
 * What a lease file says, and whether the holder it names is alive (the lease itself: lease.ts). A lease
 * file is one JSON object with a checksum trailer: the holder's own fields (a checkpoint lock's
 * query and run ids) and, beside them, who holds it and until when.
 */

/** Who holds a lease. */
export interface LeaseHolder {
  /** Unique to one acquisition ('' in files of earlier versions). */
  readonly token: string;
  readonly host: string;
  /** The host's boot (`/proc/sys/kernel/random/boot_id`); null where unknown. */
  readonly bootId: string | null;
  readonly pid: number;
  /** When that process started, in clock ticks since boot (`/proc/<pid>/stat`); null where unknown. */
  readonly pidStartTime: number | null;
  /** The process that relaunched and supervises the holder (the CLI), or null. */
  readonly supervisor: ProcessRef | null;
  /** When the lease was acquired (ms since the epoch, the holder's clock). */
  readonly startedAt: number;
  /** When it was last renewed (ms since the epoch, the holder's clock). */
  readonly heartbeatAt: number;
  /**
   * How many times it was renewed: with the token, it makes each renewal's bytes unique, which a
   * takeover relies on (lease.ts).
   */
  readonly renewal: number;
  /** How long after its last heartbeat a holder on another host counts as gone. */
  readonly leaseMs: number;
}

/** A lease file's record: the holder's own fields and {@link LeaseHolder}. */
export type LeaseRecord<T extends object> = T & LeaseHolder;

/**
 * The lease period assumed for a file of an earlier version, which named no period: it rewrote
 * its heartbeat every 10 s and counted a lock 30 s old as stale.
 */
const EARLIER_LEASE_MS = 30_000;

/** A lease file as read: its exact bytes (what a takeover compares) and the record they hold. */
export type LeaseFile<T extends object> =
  | { readonly bytes: Buffer; readonly record: LeaseRecord<T>; readonly problem: null }
  /** A file that cannot be read (garbage, torn): `problem` says why. It counts as stale. */
  | { readonly bytes: Buffer; readonly record: null; readonly problem: string };

export function encodeLease<T extends object>(record: LeaseRecord<T>): Buffer {
  return withChecksum(Buffer.from(JSON.stringify(record)));
}

function corrupt(path: string, why: string): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
}

const isRef = (v: unknown): v is ProcessRef =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as ProcessRef).pid === 'number' &&
  ((v as ProcessRef).startTime === null || typeof (v as ProcessRef).startTime === 'number');

/**
 * The record in a lease file's bytes. Throws CHECKPOINT_CORRUPT naming `path` when they do not
 * check, hold no JSON object, or name no holder (pid, host, heartbeat). Fields that files of
 * earlier versions lack read as unknown.
 */
export function decodeLease<T extends object>(bytes: Buffer, path: string): LeaseRecord<T> {
  const text = verifyChecksum(bytes, path).toString();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw corrupt(path, (e as Error).message);
  }
  if (typeof value !== 'object' || value === null) throw corrupt(path, 'it holds no JSON object');
  const o = value as Record<string, unknown>;
  if (typeof o.pid !== 'number' || typeof o.host !== 'string' || typeof o.heartbeatAt !== 'number') {
    throw corrupt(path, 'it names no owner (pid, host, heartbeat)');
  }
  const holder: LeaseHolder = {
    token: typeof o.token === 'string' ? o.token : '',
    host: o.host,
    bootId: typeof o.bootId === 'string' ? o.bootId : null,
    pid: o.pid,
    pidStartTime: typeof o.pidStartTime === 'number' ? o.pidStartTime : null,
    supervisor: isRef(o.supervisor) ? { pid: o.supervisor.pid, startTime: o.supervisor.startTime } : null,
    startedAt: typeof o.startedAt === 'number' ? o.startedAt : o.heartbeatAt,
    heartbeatAt: o.heartbeatAt,
    renewal: typeof o.renewal === 'number' ? o.renewal : 0,
    leaseMs: typeof o.leaseMs === 'number' && o.leaseMs > 0 ? o.leaseMs : EARLIER_LEASE_MS,
  };
  return { ...(o as T), ...holder };
}

/** The bytes of a file, or undefined when there is none. */
export async function readBytes(path: string): Promise<Buffer | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // Opening (rather than stat-ing) revalidates what a network file system cached.
    handle = await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** A lease file, or undefined when there is none; an unreadable one is returned with its problem. */
export async function readLeaseFile<T extends object>(path: string): Promise<LeaseFile<T> | undefined> {
  const bytes = await readBytes(path);
  if (bytes === undefined) return undefined;
  try {
    return { bytes, record: decodeLease<T>(bytes, path), problem: null };
  } catch (e) {
    const message = (e as Error).message;
    const prefix = `checkpoint file ${path} is corrupt: `;
    return {
      bytes,
      record: null,
      problem: message.startsWith(prefix) ? message.slice(prefix.length) : message,
    };
  }
}

/** Who judges a lease: from which host and boot, at what time (ms since the epoch). */
export interface LeaseObserver {
  readonly host: string;
  readonly bootId: string | null;
  readonly now: number;
}

/**
 * Whether a lease's holder is alive, and why. A holder that is alive may be `dying`: its process
 * runs, but the process supervising it is gone, and it follows its supervisor (it ends within
 * moments) — a new run waits for it rather than failing at once.
 */
export type LeaseVerdict =
  | { readonly live: true; readonly dying: string | null; readonly why: string }
  | { readonly live: false; readonly why: string };

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * Judges a holder by the rules of the lease. On the holder's host, in the same boot, it is alive
 * only while its process runs — that pid, started at that time, and not exited; in another boot,
 * it is gone. On another host (storage shared between hosts) it is alive until its last heartbeat
 * is older than its lease period (the hosts' clocks are assumed to agree well within it).
 */
export function judgeLease(holder: LeaseHolder, observer: LeaseObserver): LeaseVerdict {
  if (holder.host === observer.host) {
    if (holder.bootId !== null && observer.bootId !== null && holder.bootId !== observer.bootId) {
      return { live: false, why: `the host has restarted since (boot ${holder.bootId} is over)` };
    }
    const fate = processFate({ pid: holder.pid, startTime: holder.pidStartTime });
    if (fate === 'gone') return { live: false, why: `its process ${holder.pid} is gone` };
    if (fate === 'exited') return { live: false, why: `its process ${holder.pid} has exited` };
    if (fate === 'reused') {
      return {
        live: false,
        why: `pid ${holder.pid} belongs to another process now (it started at another time)`,
      };
    }
    const s = holder.supervisor;
    if (s !== null && processFate(s) !== 'runs') {
      const why = `its process is running, but its supervising process ${s.pid} is gone`;
      return { live: true, dying: why, why };
    }
    return { live: true, dying: null, why: 'its process is running' };
  }
  const age = observer.now - holder.heartbeatAt;
  if (age > holder.leaseMs) {
    return {
      live: false,
      why: `its last heartbeat was ${seconds(age)} ago, longer than its lease of ${seconds(holder.leaseMs)}`,
    };
  }
  return {
    live: true,
    dying: null,
    why: `its last heartbeat was ${seconds(Math.max(0, age))} ago, within its lease of ${seconds(holder.leaseMs)}`,
  };
}

/** The verdict on a lease file: an unreadable one is stale. */
export function judgeLeaseFile(file: LeaseFile<object>, observer: LeaseObserver): LeaseVerdict {
  return file.record === null
    ? { live: false, why: `its file cannot be read (${file.problem})` }
    : judgeLease(file.record, observer);
}
