import { numbered } from '../util/numbered.js';

/**
 * The card-payment record of every benchmark scenario (docs/benchmarks.md: `{ txId, cardId, merchant, amount,
 * currency, country, ts }`, ≈ 64–90 bytes encoded), and the stateless work done on it. Millrace's
 * job and the `postMessage` baseline import the same functions, so both do exactly the same work.
 */

export interface Payment {
  txId: string;
  cardId: string;
  merchant: string;
  amount: number;
  currency: string;
  country: string;
  /** When the payment is due: the generator's scheduled time, in ms. */
  ts: number;
}

/** A payment after the stateless stage's map. */
export interface ScreenedPayment extends Payment {
  amountCents: number;
  highValue: boolean;
}

const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF'] as const;
const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'CH', 'NL'] as const;
const CARDS = 100_000;
const MERCHANTS = 5000;
/** Amounts run from 0.01 to 5000.00. */
const AMOUNT_CENTS = 500_000;

/** Smallest amount the filter keeps; every generated amount is above it, but the JIT cannot know. */
export const MIN_AMOUNT = 0.005;
/** Amounts above this are flagged by the map. */
export const HIGH_VALUE_AMOUNT = 1000;

/**
 * Row `offset` of generator partition `partition`: a pure function of the two (the generator source
 * is replayed from offsets), with `ts` the row's scheduled time.
 */
export function payment(partition: number, offset: number, ts: number): Payment {
  // Multiplicative mixing keeps cards and merchants spread without a random number generator.
  const n = offset * 16 + partition;
  return paymentRow(partition, offset, n, numbered('card-', (n * 7919) % CARDS), ts);
}

/**
 * Default number of distinct cards of {@link keyedPayment}. (The stateless scenario's
 * {@link payment} steps through cards with a stride that, per partition, reaches only 6 250 of them.)
 */
export const DEFAULT_CARDS = 100_000;

/**
 * `generate` of a generator over `partitions` partitions whose payments are spread over `cards`
 * distinct cards, as a keyed aggregation needs: row `offset` of `partition` is row
 * `offset × partitions + partition` of the whole stream, and its card is a hash of that number
 * modulo `cards`: cards come in no pattern (in a window of `cards` rows some come several times and
 * ≈ 37 % not at all), and every card is drawn in the long run. A pure function of its arguments.
 */
export function keyedPayment(
  cards: number,
  partitions: number,
): (partition: number, offset: number, ts: number) => Payment {
  return (partition, offset, ts) => {
    const n = offset * partitions + partition;
    return paymentRow(partition, offset, n, numbered('card-', mix32(n) % cards), ts);
  };
}

/**
 * A 32-bit integer hash (multiply–xorshift finaliser, as in MurmurHash3's `fmix32`) of the low and
 * high halves of a row number, as a non-negative integer below 2³².
 */
export function mix32(n: number): number {
  let h = (n | 0) ^ Math.imul(Math.floor(n / 0x1_0000_0000), 0x27d4eb2f);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function paymentRow(partition: number, offset: number, n: number, cardId: string, ts: number): Payment {
  return {
    txId: numbered(`${numbered('tx-', partition)}-`, offset),
    cardId,
    merchant: numbered('merchant-', (n * 31) % MERCHANTS),
    amount: (((n * 104_729) % AMOUNT_CENTS) + 1) / 100,
    currency: CURRENCIES[n % CURRENCIES.length]!,
    country: COUNTRIES[n % COUNTRIES.length]!,
    ts,
  };
}

/** The filter of the stateless scenario (keeps every generated row). */
export function screen(p: Payment): boolean {
  return p.amount > MIN_AMOUNT;
}

/**
 * The map of the stateless scenario: adds two fields. The copy is spelled out on purpose: on
 * Node 20 (V8 11.3), once optimised, `{ ...p, extra }` gives every result a hidden class of its own
 * and costs ≈ 2 µs per added field instead of ≈ 35 ns for the whole literal (measured here), which
 * would cap either pipeline near 100 k rows/s and hide what is being measured.
 */
export function enrich(p: Payment): ScreenedPayment {
  return {
    txId: p.txId,
    cardId: p.cardId,
    merchant: p.merchant,
    amount: p.amount,
    currency: p.currency,
    country: p.country,
    ts: p.ts,
    amountCents: Math.round(p.amount * 100),
    highValue: p.amount > HIGH_VALUE_AMOUNT,
  };
}
