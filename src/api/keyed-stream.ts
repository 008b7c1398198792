import { invalidArgument } from '../errors.js';
import type { LogicalNode } from '../plan/nodes.js';
import {
  declaredStates,
  looksLikeProcessor,
  type ProcessorSource,
  type TimeMode,
  type TransformWithStateOptions,
} from './stateful-processor.js';
import { Stream } from './stream.js';

const TIME_MODES: readonly TimeMode[] = ['none', 'processingTime', 'eventTime'];

/**
 * The result of `groupByKey(fn)`: rows with the same `fn(row)` meet in one task (a hash shuffle by
 * the key), where a {@link StatefulProcessor} keeps state and timers per key.
 */
export class KeyedStream<K = unknown, T = any> {
  /** @internal */
  constructor(
    private readonly input: LogicalNode,
    private readonly key: (row: T) => K,
  ) {
    Object.freeze(this);
  }

  /**
   * Runs `processor` over each key's rows with per-key state and timers (docs/stateful-processing.md).
   *
   * @example
   * payments.groupByKey((p) => p.cardId)
   *   .transformWithState(new CardGuard(), { timeMode: 'processingTime', outputMode: 'append' })
   */
  transformWithState<O, S = unknown>(
    processor: ProcessorSource<K, T, O, S>,
    options: TransformWithStateOptions<K, S>,
  ): Stream<O> {
    if (typeof processor !== 'function' && !looksLikeProcessor(processor))
      throw invalidArgument(
        'transformWithState: pass a StatefulProcessor (an object with init and handleInputRows) or a function making one',
      );
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
    if (options.name !== undefined && typeof options.name !== 'string')
      throw invalidArgument('transformWithState: name must be a string');
    return new Stream<O>(
      Object.freeze({
        kind: 'transformWithState',
        input: this.input,
        key: this.key as (row: any) => unknown,
        processor: processor as ProcessorSource<any, any, any, any>,
        timeMode: options.timeMode,
        outputMode: options.outputMode,
        timerFiring,
        initialState: initial as TransformWithStateOptions<unknown, unknown>['initialState'],
        states: Object.freeze(declaredStates(processor)),
        label: options.name,
      }),
    );
  }
}

function isIterable(v: unknown): boolean {
  return (
    typeof v === 'object' && v !== null && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function'
  );
}
