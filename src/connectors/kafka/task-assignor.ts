/**
 * How the processes of one job share its tasks (docs/scale-out.md, "Assignment"): balanced — the
 * counts of any two members differ by at most one — and sticky — a member keeps the tasks it owns
 * as far as balance allows, so a rebalance moves as few tasks (and as little state) as it can.
 * Pure and deterministic: the same members, claims and tasks give the same answer on every
 * process, whichever is the group's leader.
 */

/** A member of the group and the tasks it says it owns (from its last assignment). */
export interface AssignorMember {
  readonly id: string;
  readonly owned: readonly string[];
}

/**
 * Assigns every task to exactly one member. A task two members claim (a member that was fenced
 * out and rejoined with a stale view) is kept by the one with the fewest claims, then the lowest
 * id; claims of tasks that no longer exist are ignored. With no members, nothing is assigned.
 */
export function assignTasks(
  members: readonly AssignorMember[],
  tasks: readonly string[],
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (members.length === 0) return out;
  const sorted = [...members].sort((a, b) => compare(a.id, b.id));
  for (const m of sorted) out.set(m.id, []);
  const existing = new Set(tasks);

  // Resolve each task's claimant: one owner per task, the least-claiming member first.
  const claimsOf = new Map(sorted.map((m) => [m.id, new Set(m.owned.filter((t) => existing.has(t)))]));
  const claimant = new Map<string, string>();
  const byClaims = [...sorted].sort((a, b) => claimsOf.get(a.id)!.size - claimsOf.get(b.id)!.size);
  for (const m of byClaims) {
    for (const t of [...claimsOf.get(m.id)!].sort(compare)) {
      if (!claimant.has(t)) claimant.set(t, m.id);
    }
  }
  const kept = new Map(sorted.map((m) => [m.id, [] as string[]]));
  for (const t of [...claimant.keys()].sort(compare)) kept.get(claimant.get(t)!)!.push(t);

  // Quotas: ⌊n/m⌋ each, one more for the first n mod m members — those that keep the most.
  const base = Math.floor(tasks.length / sorted.length);
  const extra = tasks.length % sorted.length;
  const quota = new Map<string, number>();
  [...sorted]
    .sort((a, b) => kept.get(b.id)!.length - kept.get(a.id)!.length || compare(a.id, b.id))
    .forEach((m, i) => {
      quota.set(m.id, base + (i < extra ? 1 : 0));
    });

  // Each member keeps what it owns up to its quota; the rest is free.
  const free: string[] = [];
  for (const m of sorted) {
    const mine = kept.get(m.id)!;
    const q = quota.get(m.id)!;
    out.get(m.id)!.push(...mine.slice(0, q));
    free.push(...mine.slice(q));
  }
  const claimed = new Set(claimant.keys());
  for (const t of existing) if (!claimed.has(t)) free.push(t);
  free.sort(compare);

  // Free tasks go to the members below their quota, in id order.
  let next = 0;
  for (const m of sorted) {
    const mine = out.get(m.id)!;
    const q = quota.get(m.id)!;
    while (mine.length < q && next < free.length) mine.push(free[next++]!);
    mine.sort(compare);
  }
  return out;
}

/** Orders task ids as their numbers read (`t-2` before `t-10`), then as text. */
function compare(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
