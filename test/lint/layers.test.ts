import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

// The layer rules of .dependency-cruiser.cjs, as `npm run lint` runs them: on a fixture tree that
// breaks each of them once (test/fixtures/layers/src), and on src/ itself.
const root = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The violations the repository's rules find under `<baseDir>/src`, sorted: "rule: from → to", and
 * for a circle "no-circular: a ↔ b ↔ ..." with its modules in name order (whichever it was found from).
 */
async function violations(baseDir: string): Promise<string[]> {
  const options = await extractDepcruiseOptions(join(root, '.dependency-cruiser.cjs'));
  const tsConfig = extractTSConfig(join(root, 'tsconfig.json'));
  const { output } = await cruise(['src'], { ...options, baseDir, outputType: 'json' }, {}, { tsConfig });
  const result: ICruiseResult = typeof output === 'string' ? JSON.parse(output) : output;
  return result.summary.violations
    .map((v) =>
      v.cycle === undefined
        ? `${v.rule.name}: ${v.from} → ${v.to}`
        : `${v.rule.name}: ${[v.from, ...v.cycle.map((c) => c.name)]
            .filter((m, i, all) => all.indexOf(m) === i)
            .sort()
            .join(' ↔ ')}`,
    )
    .sort();
}

describe('layer rules', () => {
  it('name every forbidden import of the fixture tree, type-only ones too', async () => {
    assert.deepEqual(await violations(join(root, 'test', 'fixtures', 'layers')), [
      'connectors-below-runtime: src/connectors/frames.ts → src/runtime/ring.ts',
      'no-api-below-api: src/plan/names-api.ts → src/api/thing.ts',
      'no-circular: src/connectors/read.ts ↔ src/connectors/write.ts',
      'no-circular: src/state/freeze.ts ↔ src/state/store.ts',
      'operators-not-to-connectors: src/operators/loads-file.ts → src/connectors/read.ts',
      'plan-is-pure: src/plan/names-api.ts → src/api/thing.ts',
      'state-not-to-checkpoint: src/state/store.ts → src/checkpoint/files.ts',
      'util-at-the-bottom: src/util/knows-plan.ts → src/plan/names-api.ts',
    ]);
  });

  it('find nothing in src/', async () => {
    assert.deepEqual(await violations(root), []);
  });
});
