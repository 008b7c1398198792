import { invalidArgument } from '../errors.js';
import { type Brokers, type KafkaClientSettings, parseBrokers } from './kafka-settings.js';

/**
 * Where a query writes its dead letters (`deadLetters`) or its late rows (`lateRows`), besides
 * `q.deadLetters()` / `q.lateRows()` and their events: a directory of JSON-lines files, or a
 * Kafka topic.
 *
 * @example
 * writer.options({ onBadRecord: 'deadLetter', deadLetters: { path: 'out/dead-letters' } });
 * writer.options({ onLateRow: 'sideOutput', lateRows: { kafka: { brokers: 'k1:9092', topic: 'late' } } });
 */
export type SideOutputInput =
  | { readonly path: string }
  | {
      readonly kafka: {
        readonly brokers: Brokers;
        readonly topic: string;
        /** kafkajs client settings: `clientId`, `ssl`, `sasl`, … */
        readonly client?: KafkaClientSettings;
      };
    };

/** A resolved {@link SideOutputInput}. */
export type SideOutputTarget =
  | { readonly kind: 'files'; readonly path: string }
  | {
      readonly kind: 'kafka';
      readonly brokers: readonly string[];
      readonly topic: string;
      readonly client: KafkaClientSettings | undefined;
    };

/** Kafka's own rule for topic names. */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/** Checks a `deadLetters` or `lateRows` option (`option` names it in messages); null turns it off. */
export function resolveSideOutputTarget(option: string, value: unknown): SideOutputTarget | null {
  if (value === null) return null;
  const shape = `${option} must be { path: directory } or { kafka: { brokers, topic } }`;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgument(`${shape}, got ${JSON.stringify(value)}`);
  }
  const fields = Object.keys(value);
  const unknown = fields.filter((f) => f !== 'path' && f !== 'kafka');
  if (unknown.length > 0) throw invalidArgument(`${shape}: unknown field '${unknown[0]}'`);
  if (fields.length !== 1) throw invalidArgument(`${shape}, not both`);
  if ('path' in value) {
    const { path } = value as { path: unknown };
    if (typeof path !== 'string' || path === '') {
      throw invalidArgument(`${option}.path must be a directory path, got ${JSON.stringify(path)}`);
    }
    return Object.freeze({ kind: 'files', path });
  }
  const kafka = (value as { kafka: unknown }).kafka;
  if (typeof kafka !== 'object' || kafka === null || Array.isArray(kafka)) {
    throw invalidArgument(
      `${option}.kafka must be { brokers, topic, client? }, got ${JSON.stringify(kafka)}`,
    );
  }
  const { brokers, topic, client, ...rest } = kafka as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) {
    throw invalidArgument(`${option}.kafka: unknown field '${extra[0]}' (known: brokers, topic, client)`);
  }
  if (typeof topic !== 'string' || !TOPIC_NAME.test(topic)) {
    throw invalidArgument(
      `${option}.kafka.topic must be a Kafka topic name (letters, digits, '.', '_', '-'), got ${JSON.stringify(topic)}`,
    );
  }
  if (client !== undefined && (typeof client !== 'object' || client === null)) {
    throw invalidArgument(
      `${option}.kafka.client must be kafkajs client settings, got ${JSON.stringify(client)}`,
    );
  }
  return Object.freeze({
    kind: 'kafka',
    brokers: Object.freeze(parseBrokers(`${option}.kafka`, brokers)),
    topic,
    client: client as KafkaClientSettings | undefined,
  });
}

/**
 * A query that routes dead letters (or late rows) somewhere must have them: `deadLetters` needs
 * `onBadRecord: 'deadLetter'`, `lateRows` needs `onLateRow: 'sideOutput'`. Checked when the query
 * starts, on its final options. `millrace run --dead-letters` / `--late-rows` set both.
 */
export function checkSideOutputPolicies(options: {
  readonly onBadRecord: string;
  readonly onLateRow: string;
  readonly deadLetters: SideOutputTarget | null;
  readonly lateRows: SideOutputTarget | null;
}): void {
  if (options.deadLetters !== null && options.onBadRecord !== 'deadLetter') {
    throw invalidArgument(
      `deadLetters: this query's onBadRecord is '${options.onBadRecord}', so it has no dead letters to write: ` +
        "set onBadRecord('deadLetter') (millrace run --dead-letters does)",
    );
  }
  if (options.lateRows !== null && options.onLateRow !== 'sideOutput') {
    throw invalidArgument(
      `lateRows: this query's onLateRow is '${options.onLateRow}', so it has no late rows to write: ` +
        "set onLateRow: 'sideOutput' (millrace run --late-rows does)",
    );
  }
}
