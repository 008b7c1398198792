import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, rename, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { invalidArgument } from '../errors.js';
import { bootId, processStartTime, supervisorRef } from '../util/process-identity.js';
import { syncDirectory } from './files.js';
import {
  encodeLease,
  judgeLeaseFile,
  type LeaseFile,
  type LeaseObserver,
  type LeaseRecord,
  type LeaseVerdict,
  readBytes,
  readLeaseFile,
} from './lease-record.js';

/**
 * Exclusive ownership of something, held by one process at a time through a file: a lease, which
 * its holder renews (a heartbeat) and which another process may take over once the holder is gone
 * (`judgeLease` in lease-record.ts says when a holder counts as gone).
 *
 * Every change of the file goes through a *claim* on what it holds now: a file named after the
 * hash of its current bytes (`.<name>.<hash>.claim`), created exclusively (a complete file linked
 * into place, so exactly one process creates it). Whoever holds the claim — a run taking a stale
 * lease over, its holder renewing or releasing it — checks that the file still holds those bytes,
 * replaces it by a rename (or removes it) and drops the claim. Nobody else can change the file
 * meanwhile, and once it has changed it never holds those bytes again (each acquisition has its own
 * token, each renewal its own number), so a late contender's claim on them finds nothing to do. Of N processes taking over the
 * same stale lease, exactly one wins; a renewal never overwrites a lease another run took over.
 * A claim whose claimer died before it finished is stale itself, and is taken over the same way,
 * one level up.
 */

/** How long a lease lasts without renewal before a holder on another host counts as gone. */
export const LEASE_PERIOD_MS = 10_000;
/** How often a holder renews its lease. */
export const LEASE_RENEW_MS = 3_000;

/** How long a lease lasts and how often it is renewed. */
export interface LeaseTiming {
  /** Default {@link LEASE_PERIOD_MS}. */
  readonly periodMs?: number;
  /** Default {@link LEASE_RENEW_MS}, or a third of a shorter period; less than the period. */
  readonly renewMs?: number;
}

export interface LeaseOptions extends LeaseTiming {
  /** The clock heartbeats are written and judged by (ms since the epoch). Default `Date.now`. */
  readonly now?: () => number;
  /** The host the lease is held from. Default `os.hostname()`. */
  readonly host?: string;
  /**
   * Called once per holder when acquiring waits for a holder that is dying (its supervisor is
   * gone), with the holder and why.
   */
  readonly onWait?: (holder: LeaseRecord<object>, why: string) => void;
}

/** Why a lease was not acquired: who holds it, and why they count as alive. */
export interface LeaseRefusal<T extends object> {
  readonly holder: LeaseRecord<T>;
  readonly why: string;
}

/** What became of a lease its holder lost: who holds it now (null: nobody that can be read), and how. */
export interface LeaseLoss<T extends object> {
  readonly holder: LeaseRecord<T> | null;
  readonly why: string;
}

interface Config {
  readonly periodMs: number;
  readonly renewMs: number;
  readonly now: () => number;
  readonly host: string;
  readonly onWait: LeaseOptions['onWait'];
}

function configure(options: LeaseOptions): Config {
  const periodMs = options.periodMs ?? LEASE_PERIOD_MS;
  const renewMs = options.renewMs ?? Math.min(LEASE_RENEW_MS, periodMs / 3);
  if (!(periodMs > 0) || !(renewMs > 0) || renewMs >= periodMs) {
    throw invalidArgument(
      `a lease is renewed more often than its period: renewMs must be > 0 and < periodMs, got ${renewMs} and ${periodMs}`,
    );
  }
  return {
    periodMs,
    renewMs,
    now: options.now ?? Date.now,
    host: options.host ?? hostname(),
    onWait: options.onWait,
  };
}

/** How often acquiring looks again at a holder it waits for. */
const pollMs = (periodMs: number) => Math.max(5, Math.min(50, periodMs / 20));

/** Claims on claims taken over, at most (each one needs a claimer that died mid-takeover). */
const MAX_CLAIM_DEPTH = 8;

/** Writes `bytes` to a new temporary file beside `path` and returns its name. */
async function tempFile(path: string, bytes: Buffer, durable: boolean): Promise<string> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx');
  try {
    await handle.writeFile(bytes);
    if (durable) await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}

/** Creates `path` holding `bytes` only if it does not exist; whether it did. */
async function createExclusive(path: string, bytes: Buffer, durable: boolean): Promise<boolean> {
  // Flushed once linked, not before: the many that race for a lock and lose pay no fsync.
  const temp = await tempFile(path, bytes, false);
  try {
    await link(temp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    await unlink(temp).catch(() => {});
  }
  if (durable) {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await syncDirectory(dirname(path));
  }
  return true;
}

/** Replaces `path` by a file holding `bytes`, atomically. */
async function replace(path: string, bytes: Buffer, durable: boolean): Promise<void> {
  const temp = await tempFile(path, bytes, durable);
  try {
    await rename(temp, path);
  } catch (e) {
    await unlink(temp).catch(() => {});
    throw e;
  }
  if (durable) await syncDirectory(dirname(path));
}

const claimPath = (target: string, bytes: Buffer) =>
  join(
    dirname(target),
    `.${basename(target)}.${createHash('sha256').update(bytes).digest('hex').slice(0, 24)}.claim`,
  );

/** A supersession's outcome: done; the file changed meanwhile; or a live claimer is at it. */
type Outcome = { readonly done: true } | { readonly done: false; readonly busy: LeaseRecord<object> | null };
const DONE: Outcome = { done: true };
const CHANGED: Outcome = { done: false, busy: null };

/**
 * Does `act` (replace or remove `target`; it says whether it did) if, and only if, `target` still
 * holds `seen`, with nobody else changing it meanwhile: under a claim on `seen` (see
 * {@link Lease}). `claim` is what the claim file says of its claimer; `judge` tells a dead
 * claimer's claim, which is taken over in turn.
 */
async function supersede(
  target: string,
  seen: Buffer,
  act: () => Promise<boolean>,
  claim: Buffer,
  judge: (file: LeaseFile<object>) => LeaseVerdict,
  depth = 0,
): Promise<Outcome> {
  const path = claimPath(target, seen);
  const underClaim = async (): Promise<boolean> => {
    try {
      const current = await readBytes(target);
      return current?.equals(seen) === true && (await act());
    } finally {
      await unlink(path).catch(() => {});
    }
  };
  if (await createExclusive(path, claim, false)) return (await underClaim()) ? DONE : CHANGED;
  const held = await readLeaseFile<object>(path);
  if (held === undefined) return CHANGED;
  if (judge(held).live || depth >= MAX_CLAIM_DEPTH) return { done: false, busy: held.record };
  // Its claimer died before it finished: take its claim over, then do what it meant to.
  return supersede(path, held.bytes, underClaim, claim, judge, depth + 1);
}

/** A lease this process holds. */
export class Lease<T extends object> {
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private state: 'held' | 'lost' | 'released' = 'held';
  private loss: LeaseLoss<T> | null = null;
  private readonly lossListeners: ((loss: LeaseLoss<T>) => void)[] = [];

  private constructor(
    readonly path: string,
    private record: LeaseRecord<T>,
    private bytes: Buffer,
    private readonly config: Config,
  ) {
    this.timer = setInterval(() => void this.renew().catch(() => {}), config.renewMs);
    this.timer.unref();
  }

  /**
   * Acquires the lease at `path` for a holder described by `labels`: creates it if there is
   * none, takes it over if its holder is gone (or its file cannot be read), waits up to one lease
   * period for a holder that is dying, and otherwise returns who holds it.
   */
  static async acquire<T extends object>(
    path: string,
    labels: T,
    options: LeaseOptions = {},
  ): Promise<{ lease: Lease<T> } | ({ lease: null } & LeaseRefusal<T>)> {
    const config = configure(options);
    await mkdir(dirname(path), { recursive: true });
    const judge = (file: LeaseFile<object>) => judgeLeaseFile(file, Lease.observer(config));
    const waitUntil = performance.now() + config.periodMs;
    const waitedFor = new Set<string>();
    let refusal: LeaseRefusal<T> | null = null;
    for (;;) {
      if (refusal !== null && performance.now() >= waitUntil) return { lease: null, ...refusal };
      const now = config.now();
      const record: LeaseRecord<T> = {
        ...labels,
        token: randomBytes(12).toString('hex'),
        host: config.host,
        bootId: bootId(),
        pid: process.pid,
        pidStartTime: processStartTime(process.pid),
        supervisor: supervisorRef(),
        startedAt: now,
        heartbeatAt: now,
        renewal: 0,
        leaseMs: config.periodMs,
      };
      const bytes = encodeLease(record);
      if (await createExclusive(path, bytes, true)) return { lease: new Lease(path, record, bytes, config) };
      const seen = await readLeaseFile<T>(path);
      if (seen === undefined) continue; // released meanwhile
      const verdict = judge(seen);
      if (verdict.live) {
        const holder = seen.record!;
        if (verdict.dying === null) return { lease: null, holder, why: verdict.why };
        refusal = { holder, why: `${verdict.dying}, and it did not end within ${config.periodMs} ms` };
        if (!waitedFor.has(holder.token)) {
          waitedFor.add(holder.token);
          config.onWait?.(holder, verdict.dying);
        }
        await delay(pollMs(config.periodMs));
        continue;
      }
      const claim = encodeLease({ ...record, token: randomBytes(12).toString('hex') });
      const take = async () => {
        await replace(path, bytes, true);
        return true;
      };
      const outcome = await supersede(path, seen.bytes, take, claim, judge);
      if (outcome.done) return { lease: new Lease(path, record, bytes, config) };
      if (outcome.busy !== null) {
        // Another process is taking it over: once it has, its lease is live.
        refusal = { holder: outcome.busy as LeaseRecord<T>, why: 'it is taking the lease over' };
        await delay(pollMs(config.periodMs));
      }
    }
  }

  private static observer(config: Config): LeaseObserver {
    return { host: config.host, bootId: bootId(), now: config.now() };
  }

  /** The holder, as the file says (the last renewal). */
  get holder(): LeaseRecord<T> {
    return this.record;
  }

  /** How the lease was lost, or null while it is held (or once released). */
  get lost(): LeaseLoss<T> | null {
    return this.loss;
  }

  /** Calls `listener` once the lease is found lost (at once if it already is). */
  onLost(listener: (loss: LeaseLoss<T>) => void): void {
    if (this.loss !== null) listener(this.loss);
    else this.lossListeners.push(listener);
  }

  /** Runs `op` after every lease operation before it: a renewal, a confirmation, the release. */
  private exclusive<R>(op: () => Promise<R>): Promise<R> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => {});
    return run;
  }

  /**
   * Renews the lease now (a heartbeat); a timer does it every `renewMs`. Finds the lease lost
   * when its file no longer holds what this holder last wrote, and then writes nothing.
   */
  renew(): Promise<void> {
    if (this.state !== 'held') return Promise.resolve();
    this.renewing ??= this.exclusive(() => this.renewOnce()).finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  /**
   * Whether the lease is still this holder's, read from its file now (not only at the last
   * heartbeat): what a holder checks before it writes what only the holder may write. Finds the
   * lease lost when it is not.
   */
  confirm(): Promise<boolean> {
    return this.exclusive(async () => {
      if (this.state !== 'held') return false;
      return this.stillHeld(await readLeaseFile<T>(this.path));
    });
  }

  private async renewOnce(): Promise<void> {
    if (this.state !== 'held') return;
    const next: LeaseRecord<T> = {
      ...this.record,
      heartbeatAt: this.config.now(),
      renewal: this.record.renewal + 1,
    };
    const bytes = encodeLease(next);
    const claim = encodeLease({ ...next, token: randomBytes(12).toString('hex') });
    const judge = (file: LeaseFile<object>) => judgeLeaseFile(file, Lease.observer(this.config));
    // A heartbeat needs no fsync: after a crash of this host the lease is stale anyway.
    const write = async () => {
      await replace(this.path, bytes, false);
      return true;
    };
    const outcome = await supersede(this.path, this.bytes, write, claim, judge);
    if (outcome.done) {
      this.record = next;
      this.bytes = bytes;
      return;
    }
    // Not renewed, and still ours if a live claim on it is pending (the next renewal tells).
    this.stillHeld(await readLeaseFile<T>(this.path));
  }

  /** Whether `current` (the file as read) is this holder's lease; the lease is lost if not. */
  private stillHeld(current: LeaseFile<T> | undefined): boolean {
    if (current?.bytes.equals(this.bytes)) return true;
    this.lose(
      current === undefined
        ? { holder: null, why: 'its file was removed' }
        : current.record === null
          ? { holder: null, why: `its file was replaced by one that cannot be read (${current.problem})` }
          : { holder: current.record, why: 'it was taken over' },
    );
    return false;
  }

  private lose(loss: LeaseLoss<T>): void {
    clearInterval(this.timer);
    this.state = 'lost';
    this.loss = loss;
    for (const listener of this.lossListeners.splice(0)) listener(loss);
  }

  /** Gives the lease up: removes its file, unless another holder has it by now. */
  release(): Promise<void> {
    clearInterval(this.timer);
    return this.exclusive(async () => {
      if (this.state !== 'held') return;
      this.state = 'released';
      this.lossListeners.length = 0;
      const claim = encodeLease({ ...this.record, token: randomBytes(12).toString('hex') });
      const judge = (file: LeaseFile<object>) => judgeLeaseFile(file, Lease.observer(this.config));
      const remove = async () => {
        await unlink(this.path);
        await syncDirectory(dirname(this.path));
        return true;
      };
      await supersede(this.path, this.bytes, remove, claim, judge).catch(() => {});
    });
  }
}
