import { recordedSink } from '../connectors/registry.js';
import { ErrorCode, MillraceError } from '../errors.js';
import type { CheckpointMetadata, SinkRecord, SourceRecord, StatefulRecord } from './metadata.js';

/**
 * Query evolution (docs/operations.md, "What may change between runs"): whether a query may resume from a checkpoint written by an earlier
 * version of it, decided from two plan descriptions alone — the checkpoint's `metadata` and the
 * one the new plan would write. Pure: nothing here reads or writes files, so the decision is made
 * before any offset or state is touched, and a refused run leaves the checkpoint as it was.
 *
 * Refused (they change what the offsets or the state mean):
 * - the offset log format: v1 (sources by position) and v2 (sources by name, `sourceEvolution`)
 *   are fixed when the checkpoint is created;
 * - v1: the number of sources, a source's kind, a named source's name at its position;
 * - v2: re-adding a retired name; a kept source's kind;
 * - a source's partition count (offsets are per partition; for a generated source, row k of
 *   partition p depends on the count);
 * - the number of stateful operators, their kind, grouping keys, window, aggregations (name and
 *   kind), deduplication keys and `withinWatermark`, a processor's timeMode and state variables
 *   (names and kinds; a TTL may change), and their state partitions;
 * - a watermark input's column at a position the checkpoint knows (values restore by position);
 * - a files sink swapped for another sink or the other way round, or moved to another directory.
 *
 * Everything else is allowed: stateless operators (filters, projections, maps) come and go, user
 * functions change, rate limits, triggers, the output mode and the other sinks may change, and in
 * v2 sources are reordered, added (they start fresh) and removed (their names are retired).
 */

/** How a run continues a checkpoint whose query may have changed. */
export interface Evolution {
  /** The metadata this run continues with. */
  readonly metadata: CheckpointMetadata;
  /** `metadata` differs from the stored one: write it before anything else is read. */
  readonly changed: boolean;
  /**
   * For each stateful operator of the new plan, by its id there: the id its state is kept under
   * (`state/<id>/`, the id it had when the checkpoint was created).
   */
  readonly stateIds: Readonly<Record<number, number>>;
  /** v2: names of sources this run adds (they start from their starting offsets). */
  readonly added: readonly string[];
  /** v2: names of sources this run removes (retired from now on). */
  readonly removed: readonly string[];
}

const list = (items: readonly unknown[]) => `[${items.join(', ')}]`;

function sourceLabel(s: SourceRecord, format: 'v1' | 'v2'): string {
  if (format === 'v2') return `source '${s.name}' (${s.kind})`;
  return `source ${s.index}${s.name === null ? '' : ` '${s.name}'`} (${s.kind})`;
}

/** A kept source: the same kind and partition count. */
function compareSource(before: SourceRecord, after: SourceRecord, format: 'v1' | 'v2'): string[] {
  const label = sourceLabel(after, format);
  if (before.kind !== after.kind) {
    return [`${label}: kind changed from ${before.kind} to ${after.kind}`];
  }
  if (before.partitions !== after.partitions) {
    return [
      `${label}: partitions changed from ${before.partitions} to ${after.partitions} ` +
        '(offsets are kept per partition)',
    ];
  }
  return [];
}

function compareSourcesByPosition(stored: CheckpointMetadata, next: CheckpointMetadata): string[] {
  if (stored.sources.length !== next.sources.length) {
    return [
      `the number of sources changed from ${stored.sources.length} to ${next.sources.length} ` +
        '(the offset log v1 keeps sources by position; sources can be added and removed only with ' +
        'sourceEvolution: true, on a new checkpoint)',
    ];
  }
  const changes: string[] = [];
  for (const [i, after] of next.sources.entries()) {
    const before = stored.sources[i]!;
    if (before.name !== null && after.name !== null && before.name !== after.name) {
      changes.push(
        `source ${i}: name changed from '${before.name}' to '${after.name}' (the offset log v1 keeps ` +
          'sources by position, so a source cannot be renamed or moved)',
      );
      continue;
    }
    changes.push(...compareSource(before, after, 'v1'));
  }
  return changes;
}

function compareSourcesByName(
  stored: CheckpointMetadata,
  next: CheckpointMetadata,
): { changes: string[]; added: string[]; removed: string[] } {
  const retired = new Set(stored.retiredSources ?? []);
  const before = new Map(stored.sources.map((s) => [s.name ?? '', s]));
  const names = new Set(next.sources.map((s) => s.name ?? ''));
  const changes: string[] = [];
  const added: string[] = [];
  for (const after of next.sources) {
    const name = after.name ?? '';
    if (retired.has(name)) {
      changes.push(
        `source '${name}' was removed from this query by an earlier run, and a removed source's name ` +
          'is retired for good: a source added now needs a name never used before',
      );
      continue;
    }
    const old = before.get(name);
    if (old === undefined) added.push(name);
    else changes.push(...compareSource(old, after, 'v2'));
  }
  const removed = stored.sources.map((s) => s.name ?? '').filter((n) => !names.has(n));
  return { changes, added, removed };
}

interface AggregateDescription {
  readonly keys: readonly string[];
  readonly window: Record<string, unknown> | null;
  readonly aggregates: readonly (readonly [string, string])[];
}

interface DedupDescription {
  readonly keys: readonly string[];
  readonly withinWatermark: boolean;
}

interface JoinDescription {
  readonly keys: readonly string[];
  readonly type: string;
  readonly range: unknown;
}

const json = (v: unknown) => JSON.stringify(v ?? null);

function describeWindow(w: AggregateDescription['window']): string {
  if (w === null) return 'none';
  if (w.kind === 'session') return `sessionWindow(${w.column}, gap ${w.gapMs} ms)`;
  const slide = w.slideMs === w.sizeMs ? '' : `, slide ${w.slideMs} ms`;
  const offset = w.startOffsetMs ? `, start offset ${w.startOffsetMs} ms` : '';
  return `window(${w.column}, ${w.sizeMs} ms${slide}${offset})`;
}

/** The state's shape: what its keys and values are made of. */
function compareState(label: string, kind: string, before: unknown, after: unknown): string[] {
  if (kind === 'aggregate') {
    const a = before as AggregateDescription;
    const b = after as AggregateDescription;
    const changes: string[] = [];
    if (json(a.keys) !== json(b.keys)) {
      changes.push(`${label}: grouping keys changed from ${list(a.keys)} to ${list(b.keys)}`);
    }
    if (json(a.window) !== json(b.window)) {
      changes.push(
        `${label}: window changed from ${describeWindow(a.window)} to ${describeWindow(b.window)}`,
      );
    }
    if (json(a.aggregates) !== json(b.aggregates)) {
      const show = (aggs: AggregateDescription['aggregates']) =>
        list(aggs.map(([name, what]) => `${name}: ${what}`));
      changes.push(`${label}: aggregations changed from ${show(a.aggregates)} to ${show(b.aggregates)}`);
    }
    return changes;
  }
  if (kind === 'dedup') {
    const a = before as DedupDescription;
    const b = after as DedupDescription;
    const keys = (k: readonly string[]) => (k.length === 0 ? '[the whole row]' : list(k));
    const changes: string[] = [];
    if (json(a.keys) !== json(b.keys)) {
      changes.push(`${label}: deduplication keys changed from ${keys(a.keys)} to ${keys(b.keys)}`);
    }
    if (a.withinWatermark !== b.withinWatermark) {
      const name = (within: boolean) => (within ? 'dropDuplicatesWithinWatermark' : 'dropDuplicates');
      changes.push(`${label}: changed from ${name(a.withinWatermark)} to ${name(b.withinWatermark)}`);
    }
    return changes;
  }
  if (kind === 'transformWithState') return compareProcessorState(label, before, after);
  if (kind === 'streamJoin') {
    const a = before as JoinDescription;
    const b = after as JoinDescription;
    const changes: string[] = [];
    if (a.type !== b.type) changes.push(`${label}: join type changed from ${a.type} to ${b.type}`);
    if (json(a.keys) !== json(b.keys)) {
      changes.push(`${label}: join keys changed from ${list(a.keys)} to ${list(b.keys)}`);
    }
    if (json(a.range) !== json(b.range)) {
      changes.push(`${label}: time-range condition changed from ${json(a.range)} to ${json(b.range)}`);
    }
    return changes;
  }
  return json(before) === json(after)
    ? []
    : [`${label}: state schema changed from ${json(before)} to ${json(after)}`];
}

interface ProcessorStateDescription {
  readonly timeMode: string;
  readonly states: readonly (readonly [string, string, number | null])[];
}

/**
 * A processor's state variables pair up by name: a renamed, removed or added variable, or one of
 * another kind, would read state written under another schema. A TTL may change.
 */
function compareProcessorState(label: string, before: unknown, after: unknown): string[] {
  const a = before as ProcessorStateDescription;
  const b = after as ProcessorStateDescription;
  const changes: string[] = [];
  if (a.timeMode !== b.timeMode)
    changes.push(`${label}: timeMode changed from ${a.timeMode} to ${b.timeMode}`);
  const show = (d: ProcessorStateDescription) => list(d.states.map(([name, kind]) => `${name}: ${kind}`));
  const kinds = (d: ProcessorStateDescription) => json(d.states.map(([name, kind]) => [name, kind]));
  if (kinds(a) !== kinds(b))
    changes.push(
      `${label}: state variables changed from ${show(a)} to ${show(b)} (names and kinds must stay)`,
    );
  return changes;
}

function compareStateful(
  stored: readonly StatefulRecord[],
  next: readonly StatefulRecord[],
): { changes: string[]; stateIds: Record<number, number> } {
  const stateIds: Record<number, number> = {};
  if (stored.length !== next.length) {
    const show = (ops: readonly StatefulRecord[]) =>
      ops.length === 0 ? '' : ` (${ops.map((o) => `${o.kind} ${o.operatorId}`).join(', ')})`;
    return {
      changes: [
        `the number of stateful operators changed from ${stored.length}${show(stored)} to ` +
          `${next.length}${show(next)}`,
      ],
      stateIds,
    };
  }
  const changes: string[] = [];
  // Stateful operators pair up by their order in the plan: ids of other operators may shift.
  for (const [i, after] of next.entries()) {
    const before = stored[i]!;
    stateIds[after.operatorId] = before.operatorId;
    if (before.kind !== after.kind) {
      changes.push(
        `stateful operator ${after.operatorId}: kind changed from ${before.kind} to ${after.kind}`,
      );
      continue;
    }
    const label = `stateful operator ${after.operatorId} (${after.kind})`;
    changes.push(...compareState(label, after.kind, before.description, after.description));
    if (
      before.partitions !== undefined &&
      after.partitions !== undefined &&
      before.partitions !== after.partitions
    ) {
      changes.push(
        `${label}: state partitions changed from ${before.partitions} to ${after.partitions} (its state ` +
          `is split by key over ${before.partitions} partitions; set shufflePartitions: ${before.partitions})`,
      );
    }
  }
  return { changes, stateIds };
}

function compareWatermarks(
  stored: readonly string[] | undefined,
  next: readonly string[] | undefined,
): string[] {
  if (stored === undefined || next === undefined) return [];
  const n = Math.min(stored.length, next.length);
  for (let i = 0; i < n; i++) {
    if (stored[i] !== next[i]) {
      return [
        `watermark columns changed from ${list(stored)} to ${list(next)} (each watermark's committed ` +
          'value is restored by its position in the plan; its delay may change, its column may not)',
      ];
    }
  }
  return [];
}

function compareSink(before: SinkRecord, after: SinkRecord): string[] {
  const was = recordedSink(before.kind);
  const is = recordedSink(after.kind);
  const how = was?.recoversFromOutput ?? is?.recoversFromOutput;
  if (before.kind !== after.kind && how !== undefined) {
    const which = was?.recoversFromOutput !== undefined ? before.kind : after.kind;
    return [
      `the sink changed from ${before.kind} to ${after.kind} (a ${which} sink's exactly-once recovery ` +
        `${how}, so it cannot be swapped for another sink, nor another sink for it)`,
    ];
  }
  if (before.kind !== after.kind) return [];
  return is?.compare?.(before, after) ?? [];
}

function incompatible(location: string, changes: readonly string[], remedy: string): MillraceError {
  return new MillraceError(
    ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
    `the query cannot resume from checkpoint ${location}: ${changes.join('; ')}. ${remedy}`,
  );
}

/**
 * Decides whether the query described by `next` (what its plan would write as metadata) may resume
 * from the checkpoint described by `stored`. Throws `CHECKPOINT_INCOMPATIBLE_CHANGE` naming every
 * change that cannot be honoured; otherwise says how the run continues.
 */
export function evolveCheckpoint(
  stored: CheckpointMetadata,
  next: CheckpointMetadata,
  location: string,
): Evolution {
  if (stored.offsetLogFormat === 'v2' && next.offsetLogFormat === 'v1') {
    throw incompatible(
      location,
      [
        'its offset log is v2 (sources kept by name, written with sourceEvolution: true), and v2 cannot ' +
          'be turned back into v1',
      ],
      'Start the query with the option sourceEvolution: true',
    );
  }
  if (stored.offsetLogFormat === 'v1' && next.offsetLogFormat === 'v2') {
    throw incompatible(
      location,
      [
        'the query sets sourceEvolution: true, which keeps offsets by source name (offset log v2), and ' +
          "the checkpoint's offset log is v1 (sources kept by position)",
      ],
      'Naming sources requires a new checkpoint or one already in v2: give the query a new ' +
        'checkpointLocation, or run it without sourceEvolution',
    );
  }
  const byName = next.offsetLogFormat === 'v2';
  const sources = byName
    ? compareSourcesByName(stored, next)
    : { changes: compareSourcesByPosition(stored, next), added: [], removed: [] };
  const stateful = compareStateful(stored.stateful, next.stateful);
  const changes = [
    ...sources.changes,
    ...stateful.changes,
    ...compareWatermarks(stored.watermarks, next.watermarks),
    ...compareSink(stored.sink, next.sink),
  ];
  if (changes.length > 0) {
    throw incompatible(
      location,
      changes,
      `Undo ${changes.length === 1 ? 'this change' : 'these changes'}, or give the query a new checkpointLocation`,
    );
  }
  const metadata: CheckpointMetadata = {
    ...next,
    id: stored.id,
    formatVersion: stored.formatVersion,
    createdAt: stored.createdAt,
    retiredSources: [...(stored.retiredSources ?? []), ...sources.removed],
    // The state stays where it is: under the ids of the plan that created the checkpoint.
    stateful: next.stateful.map((s, i) => ({
      ...stored.stateful[i]!,
      ...s,
      operatorId: stored.stateful[i]!.operatorId,
    })),
  };
  return {
    metadata,
    changed: JSON.stringify(metadata) !== JSON.stringify(stored),
    stateIds: stateful.stateIds,
    added: sources.added,
    removed: sources.removed,
  };
}
