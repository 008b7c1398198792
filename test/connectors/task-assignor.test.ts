import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type AssignorMember, assignTasks } from '../../src/connectors/kafka/task-assignor.js';

const tasks = (n: number) => Array.from({ length: n }, (_, i) => `t:${i}`);
const plain = (m: Map<string, string[]>) => Object.fromEntries(m);

describe('assignTasks (how the processes of a job share its tasks)', () => {
  it('gives three new members two of six tasks each', () => {
    const out = assignTasks(
      ['b', 'a', 'c'].map((id) => ({ id, owned: [] })),
      tasks(6),
    );
    assert.deepEqual(plain(out), { a: ['t:0', 't:1'], b: ['t:2', 't:3'], c: ['t:4', 't:5'] });
  });

  it('keeps the survivors’ tasks where they are when a member goes, and shares out only the lost ones', () => {
    const out = assignTasks(
      [
        { id: 'a', owned: ['t:0', 't:1'] },
        { id: 'c', owned: ['t:4', 't:5'] },
      ],
      tasks(6),
    );
    assert.deepEqual(plain(out), { a: ['t:0', 't:1', 't:2'], c: ['t:3', 't:4', 't:5'] });
  });

  it('moves only as many tasks as balance needs to a member that joins', () => {
    const out = assignTasks(
      [
        { id: 'a', owned: ['t:0', 't:1', 't:2'] },
        { id: 'b', owned: ['t:3', 't:4', 't:5'] },
        { id: 'c', owned: [] },
      ],
      tasks(6),
    );
    assert.deepEqual(plain(out), { a: ['t:0', 't:1'], b: ['t:3', 't:4'], c: ['t:2', 't:5'] });
  });

  it('gives a task two members claim to one of them, and ignores claims of tasks that are gone', () => {
    const out = assignTasks(
      [
        { id: 'a', owned: ['t:0', 't:1', 't:9'] },
        { id: 'b', owned: ['t:1'] },
      ],
      tasks(2),
    );
    assert.deepEqual(plain(out), { a: ['t:0'], b: ['t:1'] });
  });

  it('orders task numbers as numbers, and assigns nothing without members', () => {
    assert.deepEqual(plain(assignTasks([{ id: 'a', owned: [] }], ['t:10', 't:2'])), { a: ['t:2', 't:10'] });
    assert.equal(assignTasks([], tasks(3)).size, 0);
  });

  it('is complete, disjoint, balanced, sticky and the same on every process, for any members and claims', () => {
    const scenario = fc
      .record({
        n: fc.integer({ min: 0, max: 24 }),
        ids: fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 6 }),
      })
      .chain(({ n, ids }) =>
        fc.record({
          n: fc.constant(n),
          members: fc.tuple(
            ...ids.map((id) =>
              fc.record({
                id: fc.constant(`m${id}`),
                owned: fc.uniqueArray(
                  fc.integer({ min: 0, max: 30 }).map((i) => `t:${i}`),
                  { maxLength: 10 },
                ),
              }),
            ),
          ),
        }),
      );
    fc.assert(
      fc.property(scenario, ({ n, members }: { n: number; members: AssignorMember[] }) => {
        const all = tasks(n);
        const out = assignTasks(members, all);
        const given = [...out.values()].flat();
        assert.deepEqual([...given].sort(), [...all].sort(), 'every task exactly once');
        const counts = [...out.values()].map((t) => t.length);
        assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, 'balanced');
        // Sticky: a member whose claims nobody else makes keeps as many as its share allows.
        for (const m of members) {
          const contested = members.some((o) => o !== m && o.owned.some((t) => m.owned.includes(t)));
          if (contested) continue;
          const valid = m.owned.filter((t) => all.includes(t));
          const kept = out.get(m.id)!.filter((t) => valid.includes(t)).length;
          assert.equal(kept, Math.min(valid.length, out.get(m.id)!.length), `${m.id} keeps its tasks`);
        }
        assert.deepEqual(
          plain(assignTasks([...members].reverse(), [...all].reverse())),
          plain(out),
          'deterministic',
        );
      }),
      { seed: 20261204, numRuns: 500 },
    );
  });
});
