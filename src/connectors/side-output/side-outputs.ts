import type { Message } from 'kafkajs';
import type { MillraceError } from '../../errors.js';
import type { SideOutputTarget } from '../../plan/side-output-target.js';
import type { DirectoryRole } from '../../util/writable-directory.js';
import type { SinkCommitter } from '../contract.js';
import { FilesSideOutputWriter } from './files-writer.js';
import { KafkaSideOutputWriter } from './kafka-writer.js';
import { deadLetterMessage, jsonLine, lateRowMessage } from './records.js';
import type { DeadLetter, LateRow } from './side-records.js';
import type { SideOutputWriter } from './writer.js';

/** The query options that say where dead letters and late rows go. */
export interface SideOutputOptions {
  readonly deadLetters: SideOutputTarget | null;
  readonly lateRows: SideOutputTarget | null;
}

/**
 * A run's side outputs: its dead letters and late rows, written where the query options say
 * (`deadLetters`, `lateRows`: a directory or a Kafka topic) as the driver receives them.
 *
 * Delivery is at-least-once. Every record a task wrote before it passed an epoch's barrier reaches
 * the driver before the epoch is complete, and the side outputs are flushed before each epoch
 * commits ({@link beforeEachCommit}), so the records of a committed epoch are durable. A graceful
 * stop flushes the rest ({@link close}) before the query reports it stopped. After a crash, the
 * epochs that had not committed are redone, and their records are written again — those the
 * crashed run had written already appear twice.
 */
export class SideOutputs {
  private readonly deadLetters: SideOutputWriter<DeadLetter> | null;
  private readonly lateRows: SideOutputWriter<LateRow> | null;
  private closing: Promise<void> | undefined;

  constructor(options: SideOutputOptions, runId: string, failed: (error: MillraceError) => void) {
    this.deadLetters = writer(options.deadLetters, 'deadLetters', runId, deadLetterMessage, {
      name: 'dead-letter directory',
      holds: 'the dead letters',
      setBy: '--dead-letters, deadLetters.path',
    });
    this.lateRows = writer(options.lateRows, 'lateRows', runId, lateRowMessage, {
      name: 'late-row directory',
      holds: 'the late rows',
      setBy: '--late-rows, lateRows.path',
    });
    this.deadLetters?.onFailure(failed);
    this.lateRows?.onFailure(failed);
  }

  /** Checks the destinations and connects, before the query runs: a start fails if one cannot be used. */
  async open(): Promise<void> {
    await this.deadLetters?.open();
    await this.lateRows?.open();
  }

  deadLetter(letter: DeadLetter): void {
    this.deadLetters?.write(letter);
  }

  lateRow(row: LateRow): void {
    this.lateRows?.write(row);
  }

  /** Resolves once every record received so far is durable; rejects if a write failed. */
  async flush(): Promise<void> {
    await Promise.all([this.deadLetters?.flush(), this.lateRows?.flush()]);
  }

  /**
   * The sink's committer, preceded at each epoch by a flush of the side outputs (a committer of
   * its own when the sink has none), so an epoch never commits ahead of its records.
   */
  beforeEachCommit(committer: SinkCommitter | null): SinkCommitter | null {
    if (this.deadLetters === null && this.lateRows === null) return committer;
    return {
      commit: async (epoch, messages) => {
        await this.flush();
        await committer?.commit(epoch, messages);
      },
    };
  }

  /** Flushes what is left and releases files and connections; rejects if a write failed. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const results = await Promise.allSettled([this.deadLetters?.close(), this.lateRows?.close()]);
      const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure !== undefined) throw failure.reason;
    })();
    return this.closing;
  }
}

function writer<T extends DeadLetter | LateRow>(
  target: SideOutputTarget | null,
  option: 'deadLetters' | 'lateRows',
  runId: string,
  message: (item: T) => Message,
  role: DirectoryRole,
): SideOutputWriter<T> | null {
  if (target === null) return null;
  if (target.kind === 'kafka') return new KafkaSideOutputWriter<T>(option, target, message);
  const prefix = option === 'deadLetters' ? 'dead-letters' : 'late-rows';
  return new FilesSideOutputWriter<T>(option, role, target.path, prefix, runId, jsonLine);
}
