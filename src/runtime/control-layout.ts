/**
 * The driver's control block: one small SharedArrayBuffer every worker host reads in its loop.
 * Commands that must reach a busy worker (which may not turn its event loop for a while) go here,
 * followed by a ring of the host's doorbell; messages on ports are only for worker → driver reports.
 *
 * ```
 *  Int32Array:   [ ABORT | REPORT_GEN | STARTED | pad ][ START_TIME (Float64) ] ...padding to 64 bytes
 *  byte offset:    0       4            8        12      16
 * ```
 */

/** Set to 1 by the driver when the query fails or is force-stopped: hosts leave their loops. */
export const ABORT_SLOT = 0;
/** Incremented by the driver to ask every host for a metrics report. */
export const REPORT_GEN_SLOT = 1;
/**
 * Set to 1 (with Atomics.store, after START_TIME is written) once every worker is running: the
 * query's clock starts then, so generated sources owe no rows for the workers' start-up time.
 */
export const STARTED_SLOT = 2;
/** Float64 index of the clock time the query started at (valid once STARTED is 1). */
export const START_TIME_F64 = 2;

export const CONTROL_BYTES = 64;

export function createControl(): SharedArrayBuffer {
  return new SharedArrayBuffer(CONTROL_BYTES);
}
