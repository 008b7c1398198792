#!/usr/bin/env node
// The CLI is compiled TypeScript (npm install runs the build through the `prepare` script).
import { fileURLToPath } from 'node:url';
import { followParent, gcMode, relaunch } from '../dist/src/cli/relaunch.js';
import { setHeapGrowth, singleThreadedGc } from '../dist/src/util/gc-settings.js';

let chosen;
try {
  chosen = gcMode(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`millrace: ${e.message}\n`);
  process.exit(2);
}
if (chosen.mode === 'single' && !singleThreadedGc()) {
  // Node again, with V8's single-threaded GC (see src/cli/relaunch.ts).
  process.exitCode = await relaunch(fileURLToPath(import.meta.url), process.argv.slice(2));
} else {
  followParent();
  setHeapGrowth(chosen.heapGrowth);
  const { main } = await import('../dist/src/cli/main.js');
  process.exitCode = await main(chosen.args);
}
