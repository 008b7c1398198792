import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type GroupRecord, groupTasks, readGroupRecord } from '../checkpoint/group-record.js';
import {
  type CheckpointInspection,
  type CheckpointProblem,
  inspectCheckpoint,
  type LockStatus,
  type OperatorState,
  type RestartPlan,
  whyNotACheckpoint,
} from '../checkpoint/inspect.js';
import { type CheckpointVerification, verifyCheckpoint } from '../checkpoint/verify.js';
import { type CliIO, ExitCode } from './io.js';
import { describe } from './run.js';

export const CHECKPOINT_USAGE = `Usage: millrace checkpoint inspect <dir> [--json]
       millrace checkpoint verify <dir> [--json]

  inspect   what a checkpoint holds: epochs, what a restart would do, committed offsets per
            source, the last watermarks, state per operator and partition, the lock's owner
  verify    checks every file's checksum and format, and that a restart has everything it needs
            (the metadata, the last commit and its offsets, the whole state restore chain, the
            sources' own files, a files sink's manifests); one line per problem, and a note for
            harmless damage (a file no restart reads, an unreadable lock the next run takes over)
  --json    one JSON object instead of text

A group's checkpoint (millrace run --group) is shown as the group's record (query id, topics,
partitions), then each task's own checkpoint as above, its lock saying which process runs it.

Exit codes: 0 sound (notes or not), 1 a problem was found, 2 bad usage or not a checkpoint.
`;

/** `millrace checkpoint inspect|verify <dir>`. Reads only: safe on the checkpoint of a running query. */
export async function checkpointCommand(args: string[], io: CliIO): Promise<number> {
  const [action, ...rest] = args;
  if (action === '--help' || action === '-h' || action === 'help') {
    io.out(CHECKPOINT_USAGE);
    return ExitCode.OK;
  }
  if (action !== 'inspect' && action !== 'verify') {
    const why = action === undefined ? 'name an action' : `unknown action '${action}'`;
    io.err(`millrace checkpoint: ${why}: inspect or verify\n\n${CHECKPOINT_USAGE}`);
    return ExitCode.USAGE;
  }
  const name = `millrace checkpoint ${action}`;
  let json: boolean;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: rest, allowPositionals: true, options: { json: { type: 'boolean' } } });
    json = parsed.values.json === true;
    positionals = parsed.positionals;
  } catch (e) {
    io.err(`${name}: ${(e as Error).message}\n\n${CHECKPOINT_USAGE}`);
    return ExitCode.USAGE;
  }
  if (positionals.length !== 1) {
    io.err(`${name}: name one checkpoint directory\n\n${CHECKPOINT_USAGE}`);
    return ExitCode.USAGE;
  }
  const dir = resolve(positionals[0]!);
  let group: GroupRecord | undefined;
  try {
    group = await readGroupRecord(dir);
  } catch (e) {
    io.err(`${name}: ${describe(e)}\n`);
    return ExitCode.QUERY_FAILED;
  }
  if (group !== undefined) return groupCommand(action, dir, group, json, io);
  const notACheckpoint = await whyNotACheckpoint(dir);
  if (notACheckpoint !== null) {
    io.err(`${name}: ${notACheckpoint}\n`);
    return ExitCode.USAGE;
  }
  try {
    if (action === 'inspect') {
      const report = await inspectCheckpoint(dir);
      io.out(json ? `${JSON.stringify(report)}\n` : formatInspection(report));
      return report.problems.length === 0 ? ExitCode.OK : ExitCode.QUERY_FAILED;
    }
    const report = await verifyCheckpoint(dir);
    const ok = report.problems.length === 0;
    io.out(json ? `${JSON.stringify({ ok, ...report })}\n` : formatVerification(report));
    return ok ? ExitCode.OK : ExitCode.QUERY_FAILED;
  } catch (e) {
    const hint = action === 'inspect' ? `; run 'millrace checkpoint verify ${dir}' for every problem` : '';
    io.err(`${name}: ${describe(e)}${hint}\n`);
    return ExitCode.QUERY_FAILED;
  }
}

/**
 * inspect / verify of a group's checkpoint (docs/scale-out.md): the group's record, then each
 * task's own checkpoint as a single query's — its epochs, offsets, state, and its lease (who runs
 * the task now). Exit 1 when a task has problems.
 */
async function groupCommand(
  action: 'inspect' | 'verify',
  dir: string,
  group: GroupRecord,
  json: boolean,
  io: CliIO,
): Promise<number> {
  const tasks = await groupTasks(dir);
  let problems = 0;
  const reports: {
    task: string;
    report: CheckpointInspection | CheckpointVerification | { error: string };
  }[] = [];
  for (const { task, dir: at } of tasks) {
    try {
      const report = action === 'inspect' ? await inspectCheckpoint(at) : await verifyCheckpoint(at);
      problems += report.problems.length;
      reports.push({ task, report });
    } catch (e) {
      problems += 1;
      reports.push({ task, report: { error: describe(e) } });
    }
  }
  if (json) {
    const body = {
      ...(action === 'verify' && { ok: problems === 0 }),
      group: { location: dir, ...group },
      tasks: reports.map(({ task, report }) => ({ task, ...report })),
    };
    io.out(`${JSON.stringify(body)}\n`);
  } else {
    const lines = [
      `group checkpoint ${dir}`,
      `  query id ${group.queryId}; topics ${group.topics.join(', ')}; ${group.partitions} partitions; ` +
        `${tasks.length} task${tasks.length === 1 ? '' : 's'} checkpointed`,
    ];
    for (const { task, report } of reports) {
      lines.push('', `task ${task}`);
      const text =
        'error' in report
          ? `cannot be read: ${report.error}\n`
          : action === 'inspect'
            ? formatInspection(report as CheckpointInspection)
            : formatVerification(report as CheckpointVerification);
      lines.push(
        ...text
          .trimEnd()
          .split('\n')
          .map((l) => `  ${l}`),
      );
    }
    io.out(`${lines.join('\n')}\n`);
  }
  return problems === 0 ? ExitCode.OK : ExitCode.QUERY_FAILED;
}

/** `1..3, 5, 7..8`; `none` for no versions. */
export function formatVersions(versions: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < versions.length; ) {
    let j = i;
    while (j + 1 < versions.length && versions[j + 1] === versions[j]! + 1) j++;
    parts.push(i === j ? String(versions[i]) : `${versions[i]}..${versions[j]}`);
    i = j + 1;
  }
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/** `changelog 3`, `changelogs 1..4`, `no snapshots`. */
function versions(kind: string, vs: readonly number[]): string {
  if (vs.length === 0) return `no ${kind}s`;
  return `${vs.length === 1 ? kind : `${kind}s`} ${formatVersions(vs)}`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

const time = (ms: number) => new Date(ms).toISOString();

/** The engine writes 0 for "no watermark yet" in commits. */
function formatWatermark(ms: number | null): string {
  return ms === null || ms === 0 ? 'none yet' : `${time(ms)} (${ms})`;
}

/** A duration in seconds, to the millisecond, without trailing zeros. */
const formatSeconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function describeRestart(r: RestartPlan): string[] {
  const lines =
    r.resumeAfter === null
      ? [`nothing is committed: a restart starts from the beginning (epoch 0), with empty state`]
      : [
          `last committed epoch: ${r.resumeAfter}`,
          `a restart resumes after epoch ${r.resumeAfter}: its first epoch is ${r.nextEpoch}, ` +
            `and state is restored to version ${r.restoreVersion}`,
        ];
  if (r.redoEpoch !== null) {
    lines.push(
      `epoch ${r.redoEpoch} has offsets but no commit: a restart redoes epoch ${r.redoEpoch} over exactly ` +
        'those offsets first — unless they were written at its commit (real-time mode) and the sink holds ' +
        "its commit (a files sink's manifest, every exactly-once Kafka partition's record): then it " +
        'writes the commit and goes on after the epoch',
    );
  }
  return lines;
}

function describeOperator(op: OperatorState): string[] {
  const keys = op.keys === null ? 'keys unknown' : plural(op.keys, 'key');
  const lines = [
    `operator ${op.operatorId} ${op.kind}: ${keys}, ${formatBytes(op.bytes)} in ${plural(op.partitions.length, 'partition')}`,
  ];
  if (op.partitions.length === 0) lines.push('  no state files');
  for (const p of op.partitions) {
    const keys = p.keys === null ? 'keys unknown' : plural(p.keys, 'key');
    const from = [
      ...(p.restoreFrom.snapshot === null ? [] : [`snapshot ${p.restoreFrom.snapshot}`]),
      ...(p.restoreFrom.changelogs.length === 0 ? [] : [versions('changelog', p.restoreFrom.changelogs)]),
    ];
    const onDisk = [versions('snapshot', p.snapshots), versions('changelog', p.changelogs)];
    lines.push(
      `  partition ${p.partition}: ${keys}, ${formatBytes(p.bytes)}; ` +
        `restores from ${from.length === 0 ? 'nothing' : from.join(' + ')}; on disk: ${onDisk.join(', ')}`,
    );
  }
  return lines;
}

/** The lock's owner and whether it holds the checkpoint: a line, then its lease's details. */
function describeLock(lock: LockStatus | null, unreadable: boolean): string[] {
  if (unreadable) return ['the lock file cannot be read (below): the next run takes it over as stale'];
  if (lock === null) return ['none: no run holds this checkpoint'];
  const o = lock.owner;
  const owner = `held by run ${o.runId} of query ${o.queryId}: process ${o.pid} on ${o.host}, since ${time(o.startedAt)}`;
  let verdict: string;
  if (lock.dying) {
    verdict = `${lock.why}: it is ending, and a new run waits for it (up to ${seconds(o.leaseMs)})`;
  } else if (lock.processAlive === true) {
    verdict = 'the process is running';
  } else if (lock.held) {
    verdict = `${lock.why}: the owner is live`;
  } else {
    verdict = `${lock.why}: the next run takes the lock over`;
  }
  const identity = [
    o.bootId === null ? 'boot unknown' : `boot ${o.bootId}`,
    o.pidStartTime === null
      ? 'process start time unknown'
      : `process started at clock tick ${o.pidStartTime} of that boot`,
  ];
  if (o.supervisor !== null) {
    const state = lock.supervisorAlive === null ? '' : lock.supervisorAlive ? ' (running)' : ' (gone)';
    identity.push(`supervised by process ${o.supervisor.pid}${state}`);
  }
  return [
    `${owner}; ${verdict}`,
    `identity: ${identity.join(', ')}`,
    `lease: ${seconds(o.leaseMs)} after each heartbeat; last heartbeat ${seconds(lock.heartbeatAgeMs)} ago`,
  ];
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

const problemLine = (p: CheckpointProblem) => `${p.file} ${p.message}`;

export function formatInspection(r: CheckpointInspection): string {
  const span = (s: CheckpointInspection['offsetEpochs']) =>
    s.count === 0
      ? 'none'
      : `${s.first === s.last ? s.first : `${s.first}..${s.last}`} (${plural(s.count, 'file')})`;
  const out = [
    `checkpoint ${r.location}`,
    `  query id           ${r.queryId}`,
    `  created            ${time(r.createdAt)}`,
    `  offset log format  ${r.offsetLogFormat} (${r.offsetLogFormat === 'v2' ? 'sources kept by name' : 'sources kept by position'})`,
    `  sink               ${r.sink}`,
    '',
    'sources',
    ...r.sources.map(
      (s) => `  source ${s.index} ${s.name ?? '(unnamed)'}: ${s.kind}, ${plural(s.partitions, 'partition')}`,
    ),
    ...(r.retiredSources.length === 0 ? [] : [`  retired: ${r.retiredSources.join(', ')}`]),
    '',
    'epochs',
    `  offsets  ${span(r.offsetEpochs)}`,
    `  commits  ${span(r.commitEpochs)}`,
    ...describeRestart(r.restart).map((l) => `  ${l}`),
  ];
  if (r.offsets !== null) {
    out.push('', `offsets of epoch ${r.offsets.epoch} (committed)`);
    for (const s of r.offsets.sources) {
      const label = s.retired
        ? `source ${s.key} (retired: removed from the query since)`
        : s.index === null
          ? `source ${s.key} (not in the metadata)`
          : `source ${s.index} ${s.name ?? '(unnamed)'}`;
      const parts = Object.entries(s.offsets).map(([p, o]) => `partition ${p} at ${o}`);
      out.push(`  ${label}: ${parts.length === 0 ? 'no partitions' : parts.join(', ')}`);
    }
  }
  if (r.watermarks !== null) {
    const w = r.watermarks;
    out.push('', `watermarks at the end of epoch ${w.epoch}`);
    out.push(`  next batch watermark  ${formatWatermark(w.nextBatchWatermarkMs)}`);
    if (w.inputs.length === 0) out.push('  (the query has no watermark)');
    for (const [i, ms] of w.inputs.entries()) out.push(`  input ${i}               ${formatWatermark(ms)}`);
    for (const h of w.heldBack) {
      const source = h.index === null ? `source ${h.source}` : `source ${h.index} ${h.name ?? '(unnamed)'}`;
      const how =
        h.heldBackMs === undefined
          ? 'it had read no row yet'
          : `${formatSeconds(h.heldBackMs)} behind the partition furthest ahead`;
      out.push(
        `  held back by ${source} partition ${h.partition}: ${how} (${plural(h.partitionsBehind, 'partition')} behind)`,
      );
    }
  }
  const v = r.restart.restoreVersion;
  out.push('', v === 0 ? 'state (nothing to restore)' : `state (version ${v}, the end of epoch ${v - 1})`);
  if (r.state.length === 0) out.push('  the query has no stateful operator');
  for (const op of r.state) out.push(...describeOperator(op).map((l) => `  ${l}`));
  out.push(
    '',
    'lock',
    ...describeLock(
      r.lock,
      r.problems.some((p) => p.file === 'lock'),
    ).map((l) => `  ${l}`),
  );
  if (r.problems.length > 0) {
    out.push('', `problems (run 'millrace checkpoint verify ${r.location}' to check every file)`);
    out.push(...r.problems.map((p) => `  ${problemLine(p)}`));
  }
  return `${out.join('\n')}\n`;
}

export function formatVerification(r: CheckpointVerification): string {
  const c = r.checked;
  const files = c.metadata + c.offsets + c.commits + c.state + c.sources + c.lock;
  const manifests = c.manifests === 0 ? '' : `, ${plural(c.manifests, 'manifest')} of the files sink`;
  const counts =
    `${plural(files + c.manifests, 'file')} checked: metadata, ${plural(c.offsets, 'offsets file')}, ` +
    `${plural(c.commits, 'commit file')}, ${plural(c.state, 'state file')}, ` +
    `${plural(c.sources, 'source file')}${manifests}, ${c.lock === 0 ? 'no lock' : 'the lock'}`;
  const notes = r.notes.map((n) => `note: ${problemLine(n)}\n`).join('');
  if (r.problems.length === 0) {
    const restart =
      r.restart.resumeAfter === null
        ? 'nothing is committed yet'
        : `a restart resumes after epoch ${r.restart.resumeAfter} and can restore the state of ` +
          plural(r.restorablePartitions, 'stateful partition');
    return `${notes}checkpoint ${r.location} is sound (${counts}); ${restart}\n`;
  }
  return (
    `${r.problems.map(problemLine).join('\n')}\n${notes}` +
    `${plural(r.problems.length, 'problem')} in checkpoint ${r.location} (${counts}). ` +
    'A restart fails on a damaged or missing file it needs: put the named files back from a copy of ' +
    'the checkpoint, or start the query on a new checkpoint location.\n'
  );
}
