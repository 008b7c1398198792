import type { MillraceError } from '../../errors.js';

/**
 * Where one kind of record (dead letters, late rows) goes, in the driver. `write` takes a record
 * and returns at once: the writer writes in the background. `flush` resolves once every record
 * written so far is durable (acknowledged by Kafka, fsynced to disk); the driver flushes before
 * each epoch commits and before a stop returns, which makes delivery at-least-once.
 */
export interface SideOutputWriter<T> {
  /** At the query's start: checks the destination and connects; fails the start if it cannot. */
  open(): Promise<void>;
  write(item: T): void;
  /** Rejects with the writer's failure, if a write failed. */
  flush(): Promise<void>;
  /** Flushes, then releases files and connections. */
  close(): Promise<void>;
  /** A background write failed (once): the query fails with `error`. */
  onFailure(report: (error: MillraceError) => void): void;
}
