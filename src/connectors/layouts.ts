/**
 * The layouts (partitions) of sources that learn them from outside, by key, while a job is being
 * built (a connector's `layout`: a subscription's topic-partitions).
 *
 * A plan needs every source's partition count. So the driver builds the job once, asks the outside
 * (`resolveLayouts` in `resolve.ts`), and builds it again inside {@link withLayouts}; each worker builds it
 * inside the same layouts, handed over in its start message, so every thread plans the same
 * partitions. Outside a build the map is empty: nothing here outlives the synchronous build it
 * serves.
 */
const layouts = new Map<string, unknown>();

/** Layouts by key, as the driver resolved them (plain data: they travel to the workers). */
export type ResolvedLayouts = Readonly<Record<string, unknown>>;

/** The layout of the build under way, if the driver resolved it (spec builders call this). */
export function resolvedLayout(key: string): unknown {
  return layouts.get(key);
}

/** Runs a (synchronous) build with these layouts in force. */
export function withLayouts<R>(resolved: ResolvedLayouts, build: () => R): R {
  for (const [k, v] of Object.entries(resolved)) layouts.set(k, v);
  try {
    return build();
  } finally {
    layouts.clear();
  }
}
