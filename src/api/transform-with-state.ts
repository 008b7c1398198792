import { invalidArgument } from '../errors.js';
import type { LogicalNode, TransformWithStateNode } from '../plan/nodes.js';
import {
  checkProcessor,
  declaredStates,
  type ProcessorSource,
  type TimeMode,
  type TransformWithStateOptions,
} from '../plan/stateful-processor.js';

const TIME_MODES: readonly TimeMode[] = ['none', 'processingTime', 'eventTime'];

/** @internal The node of `input.groupByKey(key).transformWithState(processor, options)`. */
export function transformWithStateNode<K, T, O, S>(
  input: LogicalNode,
  key: (row: T) => K,
  processor: ProcessorSource<K, T, O, S>,
  options: TransformWithStateOptions<K, S>,
): TransformWithStateNode {
  if (typeof processor !== 'function' && (typeof processor !== 'object' || processor === null))
    throw invalidArgument(
      'transformWithState: pass a StatefulProcessor (an object with handleInputRows) or a function making one',
    );
  if (typeof processor !== 'function') checkProcessor(processor, 'the processor');
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(
      "transformWithState: pass options, e.g. { timeMode: 'none', outputMode: 'append' }",
    );
  if (!TIME_MODES.includes(options.timeMode))
    throw invalidArgument(
      `transformWithState: timeMode must be one of ${TIME_MODES.join(', ')}, got ${JSON.stringify(options.timeMode)}`,
    );
  if (options.outputMode !== 'append' && options.outputMode !== 'update')
    throw invalidArgument(
      `transformWithState: outputMode must be 'append' or 'update', got ${JSON.stringify(options.outputMode)}`,
    );
  const timerFiring = options.timerFiring ?? 'onArrival';
  if (timerFiring !== 'onArrival' && timerFiring !== 'wallClock')
    throw invalidArgument(
      `transformWithState: timerFiring must be 'onArrival' or 'wallClock', got ${JSON.stringify(timerFiring)}`,
    );
  const initial = options.initialState;
  if (initial !== undefined && typeof initial !== 'function' && !isIterable(initial))
    throw invalidArgument(
      'transformWithState: initialState must be an iterable of [key, state] pairs or a function',
    );
  const column = options.eventTimeColumn;
  if (column !== undefined && (typeof column !== 'string' || column === ''))
    throw invalidArgument(
      `transformWithState: eventTimeColumn must be the name of a column of the output rows, got ${JSON.stringify(column)}`,
    );
  if (options.name !== undefined && typeof options.name !== 'string')
    throw invalidArgument('transformWithState: name must be a string');
  return Object.freeze({
    kind: 'transformWithState',
    input,
    key: key as (row: any) => unknown,
    processor: processor as ProcessorSource<any, any, any, any>,
    timeMode: options.timeMode,
    outputMode: options.outputMode,
    timerFiring,
    eventTimeColumn: column,
    initialState: initial as TransformWithStateOptions<unknown, unknown>['initialState'],
    states: Object.freeze(declaredStates(processor)),
    label: options.name,
  });
}

function isIterable(v: unknown): boolean {
  return (
    typeof v === 'object' && v !== null && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function'
  );
}
