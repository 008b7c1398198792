import type { Table } from 'apache-arrow';
import { arrowUdf } from '../api/expressions.js';

/**
 * The demo's fraud model: a logistic regression over two features of each payment — the log of
 * its amount and its risk (amount / the card's usual spend) — computed column-wise over an Arrow
 * batch, the way a model scores many rows at once. The weights are illustrative, chosen so that a
 * payment at the card's usual spend scores ≈ 0.03 and one at ten times it ≈ 0.9; the rules decide
 * the alerts, and each alert shows the model's probability beside them.
 */
export const MODEL_WEIGHTS = Object.freeze({ bias: -5.2, logAmount: 0.35, risk: 0.6 });

export function scorePayments(t: Table): Float64Array {
  const amount = t.getChild('amount')!.toArray() as Float64Array;
  const risk = t.getChild('risk')!.toArray() as Float64Array;
  const { bias, logAmount, risk: wRisk } = MODEL_WEIGHTS;
  const out = new Float64Array(t.numRows);
  for (let i = 0; i < out.length; i++) {
    const z = bias + logAmount * Math.log1p(amount[i]!) + wRisk * risk[i]!;
    out[i] = 1 / (1 + Math.exp(-z));
  }
  return out;
}

/**
 * The model as a column: batches of at most 100 payments (one when the query keeps up, more under
 * load, since a batch goes out as soon as no more input waits).
 */
export const fraudModel = arrowUdf(scorePayments, {
  name: 'fraudModel',
  input: ['amount', 'risk'],
  returns: 'float64',
  maxRecordsPerBatch: 100,
});
