import type { QueryOptionsInput } from '../api/query-options.js';
import type { SideOutputInput } from '../api/side-output-target.js';
import { ErrorCode, MillraceError } from '../errors.js';

/** The side-output flags of `millrace run`, as parseArgs gives them. */
export interface SideOutputFlags {
  'dead-letters'?: string;
  'dead-letters-kafka'?: string;
  'late-rows'?: string;
  'late-rows-kafka'?: string;
}

/**
 * The query options the side-output flags ask for: `--dead-letters dir` or
 * `--dead-letters-kafka <brokers>/<topic>` route dead letters there and put the query under
 * `onBadRecord: 'deadLetter'`; `--late-rows` / `--late-rows-kafka` route late rows and put it
 * under `onLateRow: 'sideOutput'`. Throws `USAGE` on a flag it cannot read.
 *
 * @example sideOutputOptions({ 'dead-letters-kafka': '127.0.0.1:9092/dead-letters' })
 */
export function sideOutputOptions(flags: SideOutputFlags): QueryOptionsInput {
  const options: QueryOptionsInput = {};
  const deadLetters = target('dead-letters', flags['dead-letters'], flags['dead-letters-kafka']);
  if (deadLetters !== undefined) Object.assign(options, { onBadRecord: 'deadLetter', deadLetters });
  const lateRows = target('late-rows', flags['late-rows'], flags['late-rows-kafka']);
  if (lateRows !== undefined) Object.assign(options, { onLateRow: 'sideOutput', lateRows });
  return options;
}

function target(
  flag: string,
  dir: string | undefined,
  kafka: string | undefined,
): SideOutputInput | undefined {
  if (dir !== undefined && kafka !== undefined) {
    throw new MillraceError(ErrorCode.USAGE, `give --${flag} or --${flag}-kafka, not both`);
  }
  if (dir !== undefined) return { path: dir };
  if (kafka === undefined) return undefined;
  // Topic names cannot hold '/', broker lists do not: the last '/' separates them.
  const slash = kafka.lastIndexOf('/');
  if (slash <= 0 || slash === kafka.length - 1) {
    throw new MillraceError(
      ErrorCode.USAGE,
      `--${flag}-kafka expects <brokers>/<topic>, e.g. 127.0.0.1:9092/${flag}, got '${kafka}'`,
    );
  }
  return { kafka: { brokers: kafka.slice(0, slash), topic: kafka.slice(slash + 1) } };
}
