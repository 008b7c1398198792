/**
 * A deterministic stream of card payments with fraud mixed in, for the demo. Row `offset` of
 * `partition` is always the same payment, so the source is replayable.
 *
 * Normal traffic: a card pool sized so each card pays about once every 20 s, mostly in its home
 * country, amounts around the card's usual spend. Fraud, at fixed places in the stream:
 * - a burst: every `BURST_EVERY` rows one card pays `BURST_LENGTH` times in a row;
 * - an amount spike: 20–40× the card's usual spend;
 * - a payment from a blocked country.
 */

import { fmix32 } from '../../runtime/partitioner.js';

export interface Payment {
  txId: string;
  cardId: string;
  merchant: string;
  amount: number;
  currency: string;
  country: string;
  /** Event time: when the payment happened (ms since the epoch). */
  ts: number;
}

const COUNTRIES = ['FR', 'DE', 'ES', 'IT', 'NL', 'GB', 'US', 'PL', 'SE', 'PT'] as const;
const CURRENCY: Record<string, string> = { GB: 'GBP', US: 'USD', PL: 'PLN', SE: 'SEK' };
export const BLOCKED_COUNTRIES: readonly string[] = ['KP', 'IR', 'SY'];

export const BURST_EVERY = 4000;
export const BURST_LENGTH = 8;
const SPIKE_EVERY = 3001;
const BLOCKED_EVERY = 3203;

/** A 32-bit integer hash of two integers. */
function mix(a: number, b: number): number {
  return fmix32(Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35));
}

/** A uniform number in [0, 1) drawn from (seed, k). */
function uniform(seed: number, k: number): number {
  return mix(seed, k) / 4294967296;
}

export function cardName(card: number): string {
  return `card-${card.toString().padStart(6, '0')}`;
}

/** What a card looks like when it behaves: home country and usual spend. */
export function cardProfile(card: number): { home: string; usual: number } {
  return { home: COUNTRIES[mix(card, 1) % COUNTRIES.length]!, usual: 10 + (mix(card, 2) % 140) };
}

/** The usual spend of a card, from its id (what the amount-spike rule compares against). */
export function usualSpend(cardId: string): number {
  return cardProfile(Number(cardId.slice(5))).usual;
}

export type PaymentStream = (partition: number, offset: number, scheduledTimeMs: number) => Payment;

/** The payment generator for a stream of `cards` cards. */
export function cardPayments(cards: number): PaymentStream {
  return (partition, offset, ts) => {
    const seed = mix(partition + 1, offset);
    const txId = `tx-${partition}-${offset}`;
    const burstStart = offset - (offset % BURST_EVERY);
    if (offset - burstStart < BURST_LENGTH && burstStart > 0) {
      // A stolen card tested at several merchants in quick succession.
      const card = mix(partition, burstStart) % cards;
      const { home } = cardProfile(card);
      return payment(txId, card, `m-${mix(seed, 3) % 500}`, 1 + (mix(seed, 4) % 30), home, ts);
    }
    const card = mix(seed, 5) % cards;
    const { home, usual } = cardProfile(card);
    if (offset % SPIKE_EVERY === SPIKE_EVERY - 1) {
      return payment(
        txId,
        card,
        `m-${mix(seed, 6) % 500}`,
        Math.round(usual * (20 + uniform(seed, 7) * 20)),
        home,
        ts,
      );
    }
    if (offset % BLOCKED_EVERY === BLOCKED_EVERY - 1) {
      const country = BLOCKED_COUNTRIES[mix(seed, 8) % BLOCKED_COUNTRIES.length]!;
      return payment(txId, card, `m-${mix(seed, 9) % 500}`, usual, country, ts);
    }
    const travel = uniform(seed, 10) < 0.03;
    const country = travel ? COUNTRIES[mix(seed, 11) % COUNTRIES.length]! : home;
    const amount = Math.round(usual * (0.3 + uniform(seed, 12) * 2) * 100) / 100;
    return payment(txId, card, `m-${mix(seed, 13) % 500}`, amount, country, ts);
  };
}

function payment(
  txId: string,
  card: number,
  merchant: string,
  amount: number,
  country: string,
  ts: number,
): Payment {
  return {
    txId,
    cardId: cardName(card),
    merchant,
    amount,
    currency: CURRENCY[country] ?? 'EUR',
    country,
    ts: Math.floor(ts),
  };
}
