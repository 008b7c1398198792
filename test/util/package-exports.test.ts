import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

// Resolved through the package's own name (self-reference), as a dependent's tools resolve it.
const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('the package exports', () => {
  it('let tools resolve millrace/package.json, by require and by import', async () => {
    const path = require.resolve('millrace/package.json');
    assert.equal(path, `${root}package.json`);
    assert.equal(import.meta.resolve('millrace/package.json'), new URL(`file://${path}`).href);
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as { name: string; version: string };
    assert.equal(manifest.name, 'millrace');
    // Not a literal: the compiler would resolve it, and copy package.json into dist/.
    const specifier = ['millrace', 'package.json'].join('/');
    const imported = (await import(specifier, { with: { type: 'json' } })) as {
      default: { version: string };
    };
    assert.equal(imported.default.version, manifest.version);
  });

  it('map millrace and millrace/testing to the built modules, and nothing else', async () => {
    assert.equal(import.meta.resolve('millrace'), new URL(`file://${root}dist/src/index.js`).href);
    assert.equal(
      import.meta.resolve('millrace/testing'),
      new URL(`file://${root}dist/src/testing/index.js`).href,
    );
    assert.throws(() => import.meta.resolve('millrace/dist/src/errors.js'), {
      code: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    });
  });
});
