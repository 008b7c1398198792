import type { ResolvedLayouts } from './layouts.js';
import { sourceConnector } from './registry.js';
import type { SourceSpec } from './spec.js';

/** Resolves the layout of every source that has none yet; empty when none needs one. */
export async function resolveLayouts(
  sources: readonly { readonly spec: SourceSpec }[],
): Promise<ResolvedLayouts> {
  const out: Record<string, unknown> = {};
  for (const { spec } of sources) {
    const layout = sourceConnector(spec).layout;
    const key = layout?.pending(spec);
    if (key === undefined || key in out) continue;
    out[key] = await layout!.resolve(spec);
  }
  return out;
}
