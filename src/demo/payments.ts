/**
 * The card payments of the demo and of every benchmark, as generator sources make them: one record,
 * `{ txId, cardId, merchant, amount, currency, country, ts }`, and the streams of it. Row `offset`
 * of `partition` is a pure function of the two (a generator source is replayed from offsets),
 * stamped with its scheduled time; ids are built without Number → String conversions (see
 * numbered()).
 *
 * - {@link paymentStream}: payments spread evenly over cards, merchants, amounts, currencies and
 *   countries, the load the benchmarks measure the engine with. Its options say how rows are
 *   numbered, how many cards there are and in what order they come, and how transactions are
 *   named: {@link payment} (the stateless scenario and its postMessage baseline),
 *   {@link keyedPayment} (the keyed scenarios and the Kafka load generator) and the native ring
 *   baseline's pool (native-bench/common.ts) are settings of it.
 * - {@link CardPaymentStream}: the demo's payments, cards paying around their usual spend from
 *   home, with fraud injected at known places; the fraud and stream–static join benchmarks run
 *   the demo's plan on them.
 */

import { fmix32 } from '../plan/partitioner.js';
import { numbered } from '../util/numbered.js';

export interface Payment {
  txId: string;
  cardId: string;
  merchant: string;
  amount: number;
  currency: string;
  country: string;
  /** Event time: the row's scheduled time (ms since the epoch). */
  ts: number;
}

/** `generate` of a generator source of payments: row `offset` of `partition`, scheduled at `ts`. */
export type GeneratePayment = (partition: number, offset: number, ts: number) => Payment;

/** Distinct cards of the benchmarks' payments, unless a scenario says otherwise (`--keys`). */
export const DEFAULT_CARDS = 100_000;

/** How {@link paymentStream} draws its rows. */
export interface PaymentStreamOptions {
  /**
   * Row `offset` of `partition` is row `offset × stride + partition` of the whole stream; every
   * field is drawn from that number. With `stride` the source's partition count the stream is one
   * sequence spread over the partitions; a fixed stride keeps a stream the same whatever the
   * partitions.
   */
  stride: number;
  /** Distinct cards. */
  cards: number;
  /**
   * How a row's number picks its card: `walk`, `(n × 7919) mod cards`, a fixed walk through the
   * cards; `hash`, a hash of n modulo `cards`: cards come in no pattern (in a window of `cards`
   * rows some come several times and ≈ 37 % not at all), and every card is drawn in the long run.
   */
  cardOrder: 'walk' | 'hash';
  /**
   * `partition-offset`: `tx-<partition>-<offset>`; `serial`: `tx-<10⁹ + n>`, every id as long as
   * the next, so every record of the native ring baseline's pool has the same size.
   */
  txIds: 'partition-offset' | 'serial';
}

const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF'] as const;
const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'CH', 'NL'] as const;
/** Merchants of {@link paymentStream}: merchant-0 … merchant-4999. */
const STREAM_MERCHANTS = 5000;
/** Amounts run from 0.01 to 5000.00. */
const AMOUNT_CENTS = 500_000;

/**
 * Payments spread evenly: row n's card as `cardOrder` says, its merchant `(n × 31) mod 5000`, its
 * amount a walk through the cents from 0.01 to 5000.00, its currency and country taken in turn.
 * A pure function of its arguments.
 */
export function paymentStream(o: PaymentStreamOptions): GeneratePayment {
  const { stride, cards } = o;
  // The choices are made here, once: the generator runs once a row, on the source's thread.
  const card =
    o.cardOrder === 'hash'
      ? (n: number) => numbered('card-', mix32(n) % cards)
      : (n: number) => numbered('card-', (n * 7919) % cards);
  const txId =
    o.txIds === 'serial'
      ? (_partition: number, _offset: number, n: number) => numbered('tx-', 1_000_000_000 + n)
      : transactionId;
  return (partition, offset, ts) => {
    const n = offset * stride + partition;
    return {
      txId: txId(partition, offset, n),
      cardId: card(n),
      merchant: numbered('merchant-', (n * 31) % STREAM_MERCHANTS),
      amount: (((n * 104_729) % AMOUNT_CENTS) + 1) / 100,
      currency: CURRENCIES[n % CURRENCIES.length]!,
      country: COUNTRIES[n % COUNTRIES.length]!,
      ts,
    };
  };
}

/**
 * The payments of the stateless scenario (`millrace bench stateless`) and of its postMessage
 * baseline: a fixed stride of 16, cards walked in order, so that every row is the same whatever
 * the partitions. (The walk, per partition, reaches only 6 250 of the 100 000 cards.)
 */
export const payment: GeneratePayment = paymentStream({
  stride: 16,
  cards: DEFAULT_CARDS,
  cardOrder: 'walk',
  txIds: 'partition-offset',
});

/**
 * The payments of a keyed aggregation over `partitions` generator partitions (windowed-count,
 * checkpoint) and of the Kafka load generator (K1, K2): one sequence spread over the
 * partitions, its cards hashed over `cards`.
 */
export function keyedPayment(cards: number, partitions: number): GeneratePayment {
  return paymentStream({ stride: partitions, cards, cardOrder: 'hash', txIds: 'partition-offset' });
}

/** `tx-<partition>-<offset>`. */
function transactionId(partition: number, offset: number): string {
  return numbered(`${numbered('tx-', partition)}-`, offset);
}

/**
 * A 32-bit integer hash of a row number (MurmurHash3's finaliser over its low half, mixed with its
 * high half), as a non-negative integer below 2³².
 */
export function mix32(n: number): number {
  return fmix32((n | 0) ^ Math.imul(Math.floor(n / 0x1_0000_0000), 0x27d4eb2f));
}

// The demo's payments.

export const FRAUD_KINDS = ['burst', 'impossible-travel', 'amount-spike', 'card-silent'] as const;
export type FraudKind = (typeof FRAUD_KINDS)[number];

/** One injected fraud: its card, and the offset of its last row in its partition. */
export interface Incident {
  kind: FraudKind;
  cardId: string;
  partition: number;
  lastOffset: number;
}

/** Capitals' coordinates (degrees), for the impossible-travel rule. */
export const COUNTRY_POSITION: Readonly<Record<string, readonly [number, number]>> = {
  FR: [48.9, 2.4],
  DE: [52.5, 13.4],
  ES: [40.4, -3.7],
  IT: [41.9, 12.5],
  NL: [52.4, 4.9],
  GB: [51.5, -0.1],
  PL: [52.2, 21.0],
  SE: [59.3, 18.1],
  PT: [38.7, -9.1],
  US: [38.9, -77.0],
  BR: [-15.8, -47.9],
  JP: [35.7, 139.7],
};
const HOMES = ['FR', 'DE', 'ES', 'IT', 'NL', 'GB', 'PL', 'SE', 'PT'] as const;
const FAR_AWAY = ['US', 'BR', 'JP'] as const;
const CURRENCY: Record<string, string> = { GB: 'GBP', US: 'USD', PL: 'PLN', SE: 'SEK', BR: 'BRL', JP: 'JPY' };

/** Merchants m-0 … m-(MERCHANTS − 1). */
export const MERCHANTS = 500;
/** Clean cards pay once every this many seconds. */
const CLEAN_CYCLE_S = 20;
/** With replays: rows in 1000 that send a clean payment again, and how long after it. */
const REPLAY_PER_MILLE = 2;
const REPLAY_DELAY_S = 0.5;

export interface CardPaymentOptions {
  /** Send a few clean payments twice (see {@link CardPaymentStream}). Default false. */
  replays?: boolean;
}
/** Offset steps between incidents: `rate + INCIDENT_SKEW` (see the file comment). */
const INCIDENT_SKEW = 13;

/** A 32-bit integer hash of two integers. */
function mix(a: number, b: number): number {
  return fmix32(Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35));
}

/** A uniform number in [0, 1) drawn from (seed, k). */
function uniform(seed: number, k: number): number {
  return mix(seed, k) / 4294967296;
}

export function cardName(card: number): string {
  return numbered('card-', card, 6);
}

/** A card's usual spend, from its id: what the amount-spike rule compares against. */
export function usualSpend(cardId: string): number {
  const n = Number(cardId.slice(5));
  return 10 + (mix(Number.isFinite(n) ? n : 0, 2) % 140);
}

function homeOf(card: number): string {
  return HOMES[mix(card, 1) % HOMES.length]!;
}

/**
 * The demo's payments, `rowsPerSecond` over `partitions`: a deterministic stream with fraud
 * injected at known places, for the demo, its detection test and the benchmarks of its detector.
 * Row `offset` of `partition` is always the same payment, so the source is replayable, and
 * {@link CardPaymentStream.incidents} says exactly which fraud was injected.
 *
 * Clean traffic: each partition has its own pool of `20 × rate` cards (rate = rows per second per
 * partition), taken in turn, so a clean card pays exactly once every 20 s, at home, around its
 * usual spend (0.3–2.3×). Nothing a clean card does can trip a rule of the detector.
 *
 * Fraud: incident `i` of a partition starts at offset `i × (rate + 13)` (about one a second), on a
 * card of its own, and takes a few rows ("legs") at fixed distances from its start:
 * - `burst`: 8 payments in a row (a stolen card tested at several merchants);
 * - `impossible-travel`: a payment at home, then one 5 s later from a country far away;
 * - `amount-spike`: one payment of 20–40× the card's usual spend;
 * - `card-silent`: 4 payments 2 s apart (a card in steady use), then nothing.
 * The `+ 13` keeps the legs of different incidents on different offsets (for rates ≥ 100/s).
 *
 * Replays (`replays: true`, the demo's): a few clean payments are sent a second time, the same
 * payment with the same `txId` and time, half a second later (a terminal retrying); the demo drops
 * them with `dropDuplicatesWithinWatermark('txId')`. The benchmarks run without them.
 */
export class CardPaymentStream {
  /** Rows per second of one partition. */
  readonly rate: number;
  private readonly step: number;
  private readonly legs: Readonly<Record<FraudKind, readonly number[]>>;
  private readonly span: number;

  /** Rows a replay comes after its original; 0: no replays. */
  private readonly replayDistance: number;
  /** The generator's schedule: ms between two rows of a partition. */
  private readonly msPerRow: number;

  constructor(rowsPerSecond: number, partitions: number, options: CardPaymentOptions = {}) {
    this.rate = Math.max(1, Math.round(rowsPerSecond / partitions));
    this.msPerRow = (1000 * partitions) / rowsPerSecond;
    this.replayDistance = options.replays ? Math.max(1, Math.round(this.rate * REPLAY_DELAY_S)) : 0;
    const r = this.rate;
    this.step = r + INCIDENT_SKEW;
    this.legs = {
      burst: [0, 1, 2, 3, 4, 5, 6, 7],
      'impossible-travel': [0, 5 * r],
      'amount-spike': [0],
      'card-silent': [0, 2 * r, 4 * r, 6 * r],
    };
    this.span = 6 * r;
  }

  /** The payment at `offset` of `partition`, scheduled at `ts`. */
  readonly generate = (partition: number, offset: number, ts: number): Payment => {
    if (this.replayDistance === 0) return this.paymentAt(partition, offset, ts);
    const original = this.replayOf(partition, offset);
    if (original < 0) return this.paymentAt(partition, offset, ts);
    // The original's own time: its schedule, a whole number of ms when the rate makes it one.
    const at = ts - (offset - original) * this.msPerRow;
    const whole = Math.round(at);
    return this.paymentAt(partition, original, Math.abs(at - whole) < 1e-6 ? whole : at);
  };

  /**
   * With `replays`: the offset of the payment that row `offset` sends again, or -1 when it is a
   * payment of its own. About {@link REPLAY_PER_MILLE} ‰ of the rows are replays, each of the clean
   * payment {@link REPLAY_DELAY_S} s before it; neither row is a leg of an incident, and no replay
   * is sent again.
   */
  private replayOf(partition: number, offset: number): number {
    const original = offset - this.replayDistance;
    if (original < 0 || mix(partition + 7, offset) % 1000 >= REPLAY_PER_MILLE) return -1;
    if (this.incidentAt(partition, offset) !== null || this.incidentAt(partition, original) !== null)
      return -1;
    return this.replayOf(partition, original) >= 0 ? -1 : original;
  }

  /** With `replays`: how many rows of `partition` before `endOffset` are replays. */
  replays(partition: number, endOffset: number): number {
    let n = 0;
    for (let offset = 0; offset < endOffset; offset++) if (this.replayOf(partition, offset) >= 0) n++;
    return n;
  }

  private paymentAt(partition: number, offset: number, ts: number): Payment {
    const seed = mix(partition + 1, offset);
    const txId = transactionId(partition, offset);
    const merchant = numbered('m-', mix(seed, 3) % MERCHANTS);
    const hit = this.incidentAt(partition, offset);
    if (hit === null) {
      const card = partition * this.rate * CLEAN_CYCLE_S + (offset % (this.rate * CLEAN_CYCLE_S));
      const id = cardName(card);
      const amount = Math.round(usualSpend(id) * (0.3 + uniform(seed, 12) * 2) * 100) / 100;
      return demoPayment(txId, id, merchant, amount, homeOf(card), ts);
    }
    const { kind, card, leg } = hit;
    const id = cardName(card);
    const usual = usualSpend(id);
    switch (kind) {
      case 'burst':
        return demoPayment(txId, id, merchant, 1 + (mix(seed, 4) % 30), homeOf(card), ts);
      case 'impossible-travel': {
        const country = leg === 0 ? homeOf(card) : FAR_AWAY[mix(card, 5) % FAR_AWAY.length]!;
        return demoPayment(txId, id, merchant, usual, country, ts);
      }
      case 'amount-spike':
        return demoPayment(
          txId,
          id,
          merchant,
          Math.round(usual * (20 + uniform(seed, 7) * 20)),
          homeOf(card),
          ts,
        );
      case 'card-silent':
        return demoPayment(txId, id, merchant, usual, homeOf(card), ts);
    }
  }

  /** Every incident of `partition` whose rows all come before `endOffset`. */
  incidents(partition: number, endOffset: number): Incident[] {
    const out: Incident[] = [];
    for (let i = 1; i * this.step < endOffset; i++) {
      const kind = this.kindOf(partition, i);
      const lastOffset = i * this.step + this.legs[kind].at(-1)!;
      if (lastOffset < endOffset)
        out.push({ kind, cardId: cardName(this.cardOf(partition, i)), partition, lastOffset });
    }
    return out;
  }

  private kindOf(partition: number, i: number): FraudKind {
    return FRAUD_KINDS[(i - 1 + partition) % FRAUD_KINDS.length]!;
  }

  /** Fraud cards are numbered apart from the clean ones (which stay below 10 000 000). */
  private cardOf(partition: number, i: number): number {
    return 10_000_000 + partition * 1_000_000 + i;
  }

  private incidentAt(
    partition: number,
    offset: number,
  ): { kind: FraudKind; card: number; leg: number } | null {
    const last = Math.floor(offset / this.step);
    for (let i = Math.max(1, Math.floor((offset - this.span) / this.step)); i <= last; i++) {
      const kind = this.kindOf(partition, i);
      const leg = this.legs[kind].indexOf(offset - i * this.step);
      if (leg >= 0) return { kind, card: this.cardOf(partition, i), leg };
    }
    return null;
  }
}

/** A merchant as the bank's risk table knows it (the demo's stream–static join). */
export interface MerchantRisk {
  merchant: string;
  merchantRisk: 'low' | 'medium' | 'high';
  category: string;
}

const CATEGORIES = [
  'grocery',
  'fuel',
  'travel',
  'electronics',
  'restaurants',
  'online',
  'gift cards',
] as const;

/** The merchant-risk table: every merchant m-0 … m-499, its category and risk level. */
export function merchantRiskTable(): MerchantRisk[] {
  return Array.from({ length: MERCHANTS }, (_, i) => {
    const category = CATEGORIES[mix(i, 21) % CATEGORIES.length]!;
    const draw = mix(i, 22) % 100;
    const merchantRisk = category === 'gift cards' || draw < 5 ? 'high' : draw < 30 ? 'medium' : 'low';
    return { merchant: `m-${i}`, merchantRisk, category };
  });
}

function demoPayment(
  txId: string,
  cardId: string,
  merchant: string,
  amount: number,
  country: string,
  ts: number,
): Payment {
  return {
    txId,
    cardId,
    merchant,
    amount,
    currency: CURRENCY[country] ?? 'EUR',
    country,
    ts: Math.floor(ts),
  };
}

/** Great-circle distance between two countries' capitals, km. */
export function distanceKm(a: string, b: string): number {
  const p = COUNTRY_POSITION[a];
  const q = COUNTRY_POSITION[b];
  if (p === undefined || q === undefined) return 0;
  const rad = Math.PI / 180;
  const dLat = (q[0] - p[0]) * rad;
  const dLon = (q[1] - p[1]) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(p[0] * rad) * Math.cos(q[0] * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.sqrt(h));
}
