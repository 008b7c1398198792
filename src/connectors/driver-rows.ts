import type { SinkContext } from './contract.js';
import type { SinkRuntime } from './sink-runtime.js';

/**
 * The worker side of a sink whose rows travel to the driver, which keeps or prints them (its
 * connector's `driverRows`): each row goes back on the host's result ring as it is written.
 */
export class RowsToDriver implements SinkRuntime {
  constructor(private readonly toDriver: SinkContext['toDriver']) {}

  write(row: unknown): undefined {
    this.toDriver(row);
    return undefined;
  }

  epochEnd(): undefined {
    return undefined;
  }

  close(): undefined {
    return undefined;
  }
}
