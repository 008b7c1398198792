import { parseArgs } from 'node:util';
import { S1_RATIO, type ScaleOutOptions } from '../../bench/scale-out.js';
import { parseDurationOption, parsePositiveInt, UsageError } from './options.js';

export const SCALE_OUT_USAGE = `millrace bench scale-out --kafka BROKERS [options]

S1: a stateless job (Kafka → filter → map → Kafka) run by a group of --processes members
(\`millrace run --group\` processes on this machine), against one member, on the same broker in
the same run. Each run makes fresh topics, starts the members, waits until each runs the tasks the
group gave it, then produces the rows as fast as the producer goes; the rate is 80 % of the rows
over the time from 10 % to 90 % of them in the output. Target: the larger group ≥ ${S1_RATIO} × one
member, when every member has cores of its own (the report says whether it had).

  --kafka BROKERS   host:port[,host:port] of a broker that can create and delete topics
  --processes N     members of the larger group (default 3)
  --partitions N    partitions of the topics: the group's tasks (default 6)
  --rows N          rows produced in each run (default 300000)
  --workers N       worker threads of each task's query (default 1)
  --runs N          runs per group size, the sizes alternating; medians reported (default 1)
  --run-timeout D   how long one run may take (default 2min)
  --out DIR         where scale-out.json goes (default bench-out)
  --json            print the result as JSON
`;

export function parseScaleOutArgs(args: string[]): ScaleOutOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        kafka: { type: 'string' },
        processes: { type: 'string' },
        partitions: { type: 'string' },
        rows: { type: 'string' },
        workers: { type: 'string' },
        runs: { type: 'string' },
        'run-timeout': { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const text = (name: string, fallback: string) => (values[name] as string | undefined) ?? fallback;
  const brokers = text('kafka', '')
    .split(',')
    .filter((b) => b !== '');
  if (brokers.length === 0 || brokers.some((b) => !/^\S+:\d+$/.test(b))) {
    throw new UsageError(`--kafka: expected host:port[,host:port], got '${text('kafka', '')}'`);
  }
  const processes = parsePositiveInt(text('processes', '3'), '--processes');
  if (processes < 2) throw new UsageError('--processes must be at least 2 (it is compared with one)');
  const partitions = parsePositiveInt(text('partitions', '6'), '--partitions');
  if (partitions < processes) {
    throw new UsageError(
      `--partitions (${partitions}) must be at least --processes (${processes}): each member needs a task`,
    );
  }
  return {
    brokers,
    processes,
    partitions,
    rows: parsePositiveInt(text('rows', '300000'), '--rows'),
    workers: parsePositiveInt(text('workers', '1'), '--workers'),
    runs: parsePositiveInt(text('runs', '1'), '--runs'),
    runTimeoutMs: parseDurationOption(text('run-timeout', '2min'), '--run-timeout'),
    outDir: text('out', 'bench-out'),
    json: values.json === true,
  };
}
