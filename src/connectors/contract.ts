/**
 * The contract between the engine and its connectors. A connector is one folder of
 * `src/connectors/` and one line of the registry (`registry.ts`): the engine asks it, through the
 * hooks below, everything that differs between sources or sinks — at plan time, on the driver, in
 * the workers, and in the checkpoint — and names no kind itself.
 *
 * Every hook but one is optional, and its absence has a meaning each hook's comment gives (no
 * decoding, nothing in the checkpoint, nothing to commit, nothing to check): a new source needs
 * only its spec builder and one hook that says where its rows come from (`feed` on the driver, or
 * `generated` in the task), a new sink only `writer`.
 *
 * Connectors reach the engine's rings only through the ports defined here ({@link FeedPort},
 * {@link DriverRows}); they never write frames themselves.
 */

import type { Damage } from '../checkpoint/damage.js';
import type { OutputMode } from '../plan/output-mode.js';
import type { SinkCommitMessage, SinkRuntime } from './sink-runtime.js';
import type { SinkKind, SinkSpec, SourceKind, SourceSpec } from './spec.js';

// --- sources ------------------------------------------------------------------------------------

/**
 * One source partition's feed ring, as the driver side of a source writes it. Rows wait in the
 * port when the ring is full (`blocked`); the source sends nothing more until the engine calls
 * its feed's cursor again.
 */
export interface FeedPort {
  /** Sends the row at `offset`; false when it had to wait for space (the ring is full). */
  row(row: unknown, offset: number, sourceTime: number, readTime?: number): boolean;
  /** Sends a record the source could not read as a row: the task applies `onBadRecord` to it. */
  badRecord(record: BadSourceRecord, offset: number, sourceTime: number): boolean;
  /** Throws the error sending `row` would (not encodable, larger than a ring) without sending it. */
  check(row: unknown): void;
  /** Ends epoch `epoch` at `end`: the task reads up to `end`, then takes this for the epoch's barrier. */
  endEpoch(epoch: number, end: number): boolean;
  /** Writes a marker the engine placed (barrier, flush probe, end of stream); opaque to sources. */
  marker(marker: FeedMarker): boolean;
  /**
   * Says whether the partition has input not sent yet (`behind`) or has sent all there is: a
   * partition that is behind holds the query's watermark back (docs/semantics.md). A task starts
   * out taking its partition for behind, so a feed says `false` once it has caught up.
   */
  backlog(behind: boolean): boolean;
  /** Makes what was written visible to the task. */
  publish(): void;
  /** A frame waits for space in the ring. */
  readonly blocked: boolean;
  /** Frames waiting for space. */
  readonly pendingFrames: number;
}

/** A marker of the engine's, placed among a source's rows. */
export interface FeedMarker {
  readonly kind: number;
  readonly value: number;
}

/** A record a source read and could not turn into a row (a malformed line of a file). */
export interface BadSourceRecord {
  /** Where it was read (a file name). */
  readonly file: string;
  /** Its line (0 when the format has none). */
  readonly line: number;
  /** Its text, clipped. */
  readonly text: string;
  readonly reason: string;
}

/** A row source the program itself feeds (`q.source(name).addData(rows)`). */
export interface ProgramInput {
  readonly name: string;
  readonly partitions: number;
  /** Appends rows to a partition and sends them as the query takes them; returns the new end. */
  addData(rows: Iterable<unknown>, partition?: number): number;
  /** Appends rows without sending them yet (the rows a query starts with). */
  preload(rows: Iterable<unknown>, partition?: number): void;
  /** Every partition's rows so far (a next run of the same query can be handed them). */
  snapshot(): unknown[][];
}

/**
 * The driver side of a source whose rows the driver reads (from memory, files or brokers) and sends
 * through the feed rings. Every one sends rows only as fast as its rings take them: memory stays
 * bounded however far the source is ahead of the query.
 */
export interface DriverFeed {
  /** Real-time mode: sends every row not sent yet, and rows found later as they are found. */
  feedAll(): void;
  /** A resumed run: rows before these offsets are not sent again. */
  resumeAt(offsets: readonly number[]): void;
  /** Rows available so far, per partition. */
  latestOffsets(): number[];
  /** Called when new rows are available (micro-batch triggers react to it). */
  onData: (() => void) | undefined;
  /** Ends epoch `epoch` at `end` on a partition: the rows before `end` are sent, then the epoch's end. */
  endAt(partition: number, epoch: number, end: number): void;
  /**
   * Sources whose rows the driver holds send them through one {@link FeedCursor} per partition,
   * which also places the engine's markers among them; a source without cursors gets its markers
   * written straight to its ports (it fetches only what its rings have room for).
   */
  readonly cursors?: readonly FeedCursorPort[];
  /** Source-specific counters for progress (`sources[].metrics`). */
  metrics?(): Record<string, number>;
  /** Set when the program feeds the source itself. */
  readonly input?: ProgramInput;
  /**
   * A source outside the process (a directory, brokers): connects, and reads what it records in
   * the checkpoint (`dir`: its `sources/<id>/` directory; null without a checkpoint); a later read
   * error goes to `failed`. Sources with `open` are asked for new data with `refresh`.
   */
  open?(dir: string | null, failed: (e: unknown) => void): Promise<void>;
  /** Looks for new data now; with `caughtUp`, resolves once what it found has been sent. */
  refresh?(caughtUp: boolean): Promise<void>;
  /** Looks for new data in the background until {@link close}. */
  startPolling?(failed: (e: unknown) => void): void;
  /** Stops reading. */
  close?(): void;
  /** The run ended: releases connections. */
  dispose?(): Promise<void>;
  /** An epoch committed at these offsets (per partition). */
  committed?(offsets: readonly number[]): void;
}

/**
 * What the engine does with a partition's cursor (`feed-cursor.ts`): places its markers among the
 * rows and lets it send more when the ring has room.
 */
export interface FeedCursorPort {
  /** The next offset to send. */
  readonly sent: number;
  /** The engine's marker at `offset`: after the rows before it, before the rows from it on. */
  markAt(offset: number, marker: FeedMarker): void;
  /** The last marker: rows not sent by now are left for the next run. */
  end(marker: FeedMarker): void;
  /** Rows or markers wait that the ring could take once it has room. */
  readonly waiting: boolean;
  /** Sends what it may now. */
  pump(): void;
}

/** What a driver feed is built with. */
export interface FeedContext {
  /** One port per source partition. */
  readonly ports: readonly FeedPort[];
  /** The engine's precise wall clock (ms), for source times. */
  readonly now: () => number;
  /** Micro-batch execution: fetch only what a batch takes. */
  readonly microBatch: boolean;
}

/** What a source task does with a row read from its ring, in the worker. */
export interface TaskDecoder {
  /** Turns what the driver sent into the row; throws when it cannot (a bad record). */
  decode(raw: unknown): unknown;
  /**
   * The watermark a record carries instead of a row (a repartition topic's watermark records,
   * docs/scale-out.md), or undefined for a row. It counts for the `withWatermark` that reads the
   * source directly, as a value of a partition upstream does. `now`: the query's clock.
   */
  watermark?(raw: unknown, now: number): number | undefined;
  /** Where a record `decode` refused goes besides the query's dead letters; the task waits for it. */
  deadLetter?(raw: unknown, error: unknown): Promise<unknown>;
  /** The task ends. */
  close?(): void;
}

/** Rows a source task makes itself, on a schedule, in the worker (no driver side). */
export interface GeneratedRows<T = unknown> {
  /** The source's partitions: the rate is shared among them. */
  readonly partitions: number;
  readonly rowsPerSecond: number;
  readonly rampUpTimeMs: number;
  /** Deterministic: the same (partition, offset) always gives the same row. */
  readonly generate: (partition: number, offset: number, scheduledTimeMs: number) => T;
}

/**
 * Partitions known only from outside (a subscription's topic-partitions): resolved once by the
 * driver before the job is built again with them, and handed to every worker, which builds the
 * job with the same layouts.
 */
export interface LayoutResolution<S extends SourceSpec = SourceSpec> {
  /** The key the spec builder looks its layout up by; undefined when the spec has its partitions. */
  pending(spec: S): string | undefined;
  /** Asks the outside for the layout. */
  resolve(spec: S): Promise<unknown>;
}

/**
 * What a restart needs of a source's own checkpoint files (`sources/<id>/`), and what a check of
 * them found. `listed` holds where the offsets files a restart reads say the source stood.
 */
export type SourceFilesCheck = (
  dir: string,
  label: string,
  listed: readonly { readonly epoch: number; readonly offsets: Readonly<Record<string, number>> }[],
) => Promise<{ readonly damage: readonly Damage[]; readonly files: number }>;

export interface SourceConnector<S extends SourceSpec = SourceSpec> {
  /** The driver side, for sources the driver reads. */
  feed?(spec: S, context: FeedContext): DriverFeed;
  /** Rows made in the task on a schedule (the source has no driver side). */
  generated?(spec: S): GeneratedRows;
  /** Worker side: decodes what the driver sent (default: rows arrive as they are). */
  decoder?(spec: S, onBadRecord: 'fail' | 'skip' | 'deadLetter'): TaskDecoder | null;
  /** Partitions resolved at start. */
  readonly layout?: LayoutResolution<S>;
  /**
   * Where a first run starts, per partition, when the source decides it from outside (a
   * subscription's `latest`): resolved once, recorded in `dir` (null without a checkpoint) and
   * read from there by a run that restarts before its first commit.
   */
  startOffsets?(spec: S, dir: string | null): Promise<number[]>;
  /** Checks the source's checkpoint files before a restart and in `checkpoint verify`. */
  readonly checkFiles?: SourceFilesCheck;
  /** How processes share the source's partitions as a group (docs/scale-out.md); absent: they cannot. */
  readonly group?: GroupShare<S>;
}

/** What a group gave one member: its id, and the tasks (partition numbers) it owns. */
export interface GroupShareAssignment {
  readonly memberId: string;
  readonly tasks: readonly number[];
}

/** A repartition topic between two stages of a group's plan (docs/scale-out.md). */
export interface RepartitionStage {
  readonly topic: string;
  /** Its partitions: as many as the sources have (task p reads partition p). */
  readonly partitions: number;
  /** The partition the downstream task reads. */
  readonly task: number;
  /** The job's own sink: an exactly-once one makes the repartition writes transactional too. */
  readonly sink: SinkSpec;
  /**
   * The upstream stage's watermark input that the downstream stage declares again (the one nearest
   * to the cut), which the repartition sink passes on; null when the stage has none.
   */
  readonly watermarkInput: number | null;
  /** That watermark's `idleTimeout` (ms), or undefined: how long a silent upstream task holds the watermark back. */
  readonly watermarkIdleMs: number | undefined;
}

/** A member's hold on its group: it leaves (the others take its tasks at once). */
export interface GroupShareMembership {
  leave(): Promise<void>;
}

/**
 * A source whose partitions a group of processes shares through the group protocol of the system
 * it reads (Kafka's consumer groups). A task is a number: partition p of every source of the job.
 */
export interface GroupShare<S extends SourceSpec = SourceSpec> {
  /** What the source reads from (the cluster): every source of a group job must read one. */
  cluster(spec: S): string;
  /** The names the group subscribes to (topics), recorded in the group's checkpoint. */
  topics(spec: S): readonly string[];
  /** The task of each source partition, in partition order. */
  tasks(spec: S): readonly number[];
  /** The layout (by its key) that makes the source read only the partitions of one task. */
  taskLayout(spec: S, task: number): { readonly key: string; readonly layout: unknown };
  /**
   * The ends of a repartition topic between two stages of the plan, built from the source's
   * cluster: the sink the upstream task writes keyed rows to, and the source of downstream task p.
   */
  repartition(spec: S, stage: RepartitionStage): { readonly sink: SinkSpec; readonly source: SourceSpec };
  /** Makes the repartition topic with `partitions` partitions, or checks the one there has them. */
  ensureRepartition(spec: S, topic: string, partitions: number): Promise<void>;
  /** Joins the group on behalf of every source given (all of one cluster). */
  join(
    specs: readonly S[],
    options: {
      readonly groupId: string;
      /** Topics the group subscribes to besides the sources' (repartition topics). */
      readonly extraTopics: readonly string[];
      /** The client library that keeps the membership (the connector's default when undefined). */
      readonly client: string | undefined;
      /** Static membership: this process's fixed identity in the group. */
      readonly instanceId: string | undefined;
      readonly sessionTimeoutMs: number;
      readonly onAssigned: (assignment: GroupShareAssignment) => void;
      readonly onError: (error: Error) => void;
    },
  ): Promise<GroupShareMembership>;
}

// --- sinks --------------------------------------------------------------------------------------

/**
 * The driver's half of a sink that commits epochs (Spark's BatchWrite): `commit` runs once per
 * epoch, in order, with what every sink partition reported, before the epoch's commit file is
 * written. It must be idempotent: after a crash between the two, the epoch is redone and committed
 * again.
 */
export interface SinkCommitter {
  commit(epoch: number, messages: SinkCommitMessage[]): Promise<void>;
}

/** What a sink is told when asked whether it committed an epoch. */
export interface SinkCommitContext {
  /** The query's id: stable across runs of one checkpoint. */
  readonly queryId: string;
  /** The group task whose checkpoint it is (`0.3`), or null for a query run whole. */
  readonly task: string | null;
  /** The sink's partitions (tasks of the plan's last stage). */
  readonly partitions: number;
}

/** What the worker side of a sink is built with. */
export interface SinkContext {
  /** The sink partition. */
  readonly partition: number;
  /** The query's id: stable across runs of one checkpoint. */
  readonly queryId: string;
  /**
   * The group task the query runs (`0.3`; docs/scale-out.md), or null for a query run whole: a
   * sink that names things per partition (a transactional id) names them per task and partition.
   */
  readonly task: string | null;
  /** The first epoch of this run. */
  readonly firstEpoch: number;
  /** Sends a row to the driver side of the sink ({@link SinkConnector.driverRows}). */
  readonly toDriver: (row: unknown) => void;
}

/** Rows a sink partition sends back to the driver, received there. */
export interface DriverRows {
  row(partition: number, row: unknown): void;
  /** The partition passed the barrier of `epoch`. */
  endEpoch?(partition: number, epoch: number): void;
  /** Every partition passed `epoch`, and it is committed. */
  commitEpoch?(epoch: number): void;
  /** Rows the program reads back (`q.sink(name)`), when the sink keeps them. */
  readonly output?: ProgramOutput;
}

/** One epoch's rows as a kept sink exposes them. */
export interface SinkEpoch<T = unknown> {
  readonly epochId: number;
  readonly rows: T[];
}

/** A sink's output kept in the driver, read by the program. */
export interface ProgramOutput {
  readonly name: string;
  rows<T = unknown>(): T[];
  epochs<T = unknown>(): SinkEpoch<T>[];
  /** Takes the committed epochs of the run this one continues. */
  carryCommitted(earlier: ProgramOutput): void;
}

/** What the driver side of a sink is built with. */
export interface DriverRowsContext {
  readonly partitions: number;
  readonly outputMode: OutputMode;
  /** The epoch the run resumed after (−1: none). */
  readonly resumedAfter: number;
  /** Prints a line (the console, or what the program gave `startQuery`). */
  readonly print: (line: string, stream: 'stdout' | 'stderr') => void;
}

/** What a sink records in the checkpoint's metadata, besides its kind. */
export type SinkRecordFields = Readonly<Record<string, string | undefined>>;

export interface SinkConnector<S extends SinkSpec = SinkSpec> {
  /** The worker side: what each sink task writes to. */
  writer(spec: S, context: SinkContext): SinkRuntime;
  /** The driver side of a sink whose rows travel back to the driver (stored, printed). */
  driverRows?(spec: S, context: DriverRowsContext): DriverRows;
  /**
   * The driver's half of a sink that commits epochs, or null. `commitOnHosts` asks every worker
   * host to commit the epoch in its sink partitions (`SinkRuntime.commitEpoch`).
   */
  committer?(
    spec: S,
    mode: OutputMode,
    commitOnHosts: (epoch: number) => Promise<void>,
  ): SinkCommitter | null;
  /**
   * Whether the sink's own commit of `epoch` is done (a files sink's manifest is written), asked at
   * a restart of an epoch whose offsets were written at its commit and whose commit file was not:
   * if so the restart finishes the commit instead of redoing the epoch. A sink without it has its
   * epoch redone, and recognises the redo by itself.
   */
  hasCommitted?(spec: S, epoch: number, context: SinkCommitContext): Promise<boolean>;
  /** Why the sink refuses asynchronous progress tracking, if it does (plan time). */
  refusesAsyncProgress?(spec: S): string | undefined;
  /** Why the sink cannot be written by a group's tasks, if it cannot (plan time). */
  refusesGroup?(spec: S): string | undefined;
  /** Plan-time checks against the trigger (real time: its checkpoint interval, ms). */
  checkTrigger?(spec: S, checkpointIntervalMs: number | null): void;
  /** What the checkpoint's metadata records of the sink, besides its kind. */
  record?(spec: S): SinkRecordFields;
  /**
   * How the sink's exactly-once recovery goes by what it wrote to its output ("goes by the
   * manifests in its output directory"), when it does: it then cannot be swapped for another sink
   * between runs, nor another for it.
   */
  readonly recoversFromOutput?: string;
  /** Changes between runs of the same kind that a restart cannot honour (empty: none). */
  compare?(before: SinkRecordFields, after: SinkRecordFields): string[];
  /**
   * Checks the sink's own output at start and in `checkpoint verify` (`committed`: the last
   * committed epoch; `hasOffsets(epoch)`: whether the epoch's offsets are logged). `note` says why
   * nothing could be checked, when that is so.
   */
  checkOutput?(
    record: SinkRecordFields,
    committed: number,
    hasOffsets: (epoch: number) => boolean,
  ): Promise<{ readonly damage: readonly Damage[]; readonly checked: number; readonly note?: string }>;
}

/** Every source kind's connector. */
export type SourceRegistry = {
  readonly [K in SourceKind]: SourceConnector<SourceSpec & { readonly kind: K }>;
};
/** Every sink kind's connector. */
export type SinkRegistry = { readonly [K in SinkKind]: SinkConnector<SinkSpec & { readonly kind: K }> };
