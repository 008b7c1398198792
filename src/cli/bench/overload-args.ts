import { parseArgs } from 'node:util';
import { M1_RSS_GROWTH_BYTES, type OverloadOptions } from '../../bench/overload.js';
import { parseDurationOption, parsePositiveInt, parseRate, UsageError } from './options.js';

export const OVERLOAD_USAGE = `millrace bench overload [options]

M1: a rate source --slowdown times faster than its sink, for --duration after a --warmup. The
source task and the sink task run on two worker threads with a ring between them; the sink spends
a fixed CPU time on each row (a busy wait), so it takes --rate ÷ --slowdown rows a second. The
report has the rows the source made and those that reached the sink (nothing may be lost), the
backlog the source kept as offsets, the time the source waited for ring space, and the process's
resident set, sampled. M1 passes when nothing is lost and the resident set stays within
${M1_RSS_GROWTH_BYTES / 2 ** 20} MiB of its size at the end of the warm-up.

  --rate N        rows a second the source is scheduled to make (default 100k)
  --slowdown N    how many times slower the sink is (default 10)
  --duration D    judged window (default 60s)
  --warmup D      run time before it, not judged (default 5s)
  --sample D      how often the resident set is sampled (default 500ms)
  --out DIR       where overload.json goes (default bench-out)
  --json          print the result as JSON
`;

export function parseOverloadArgs(args: string[]): OverloadOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        rate: { type: 'string' },
        slowdown: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        sample: { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const text = (name: string, fallback: string) => (values[name] as string | undefined) ?? fallback;
  const durationMs = parseDurationOption(text('duration', '60s'), '--duration');
  const sampleMs = parseDurationOption(text('sample', '500ms'), '--sample');
  if (durationMs <= 0) throw new UsageError('--duration must be positive');
  if (sampleMs <= 0) throw new UsageError('--sample must be positive');
  return {
    rate: parseRate(text('rate', '100k'), '--rate'),
    slowdown: parsePositiveInt(text('slowdown', '10'), '--slowdown'),
    durationMs,
    warmupMs: parseDurationOption(text('warmup', '5s'), '--warmup'),
    sampleMs,
    outDir: text('out', 'bench-out'),
    json: values.json === true,
  };
}
