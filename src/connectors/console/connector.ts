import type { SinkConnector } from '../contract.js';
import { RowsToDriver } from '../driver-rows.js';
import type { ConsoleSinkSpec } from '../spec.js';
import { formatConsoleRow } from './format.js';

/** Rows sent back to the driver, which prints each as it arrives. */
export const consoleSinkConnector: SinkConnector<ConsoleSinkSpec> = {
  writer: (_spec, context) => new RowsToDriver(context.toDriver),
  driverRows: (spec, context) => ({
    row: (_partition, row) => context.print(formatConsoleRow(spec, row), spec.stream),
  }),
};
