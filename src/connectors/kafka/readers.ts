import { invalidArgument } from '../../errors.js';
import { KafkaJsReader } from './kafkajs-reader.js';
import { platformaticUnsupported } from './platformatic-membership.js';
import { PlatformaticReader } from './platformatic-reader.js';
import type { KafkaReader, ReaderOptions } from './reader.js';
import type { KafkaLibrary } from './types.js';

/** The client libraries a Kafka source can read with. */
export const KAFKA_LIBRARIES: readonly KafkaLibrary[] = ['kafkajs', '@platformatic/kafka'];

/** A reader on the library the options name. */
export function kafkaReader(options: ReaderOptions): KafkaReader {
  return options.library === '@platformatic/kafka'
    ? new PlatformaticReader(options)
    : new KafkaJsReader(options);
}

/** Checks `sources.kafka`'s `library` option (`what` names the source in errors). */
export function checkLibrary(what: string, library: unknown): KafkaLibrary {
  if (library === undefined) return 'kafkajs';
  if (!KAFKA_LIBRARIES.includes(library as KafkaLibrary)) {
    throw invalidArgument(
      `${what}: library must be ${KAFKA_LIBRARIES.map((l) => `'${l}'`).join(' or ')}, got ${JSON.stringify(library)}`,
    );
  }
  if (library === '@platformatic/kafka') {
    const unsupported = platformaticUnsupported();
    if (unsupported !== null) throw invalidArgument(`${what}: ${unsupported}; use library 'kafkajs' here`);
  }
  return library as KafkaLibrary;
}
