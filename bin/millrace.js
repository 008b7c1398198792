#!/usr/bin/env node
// The CLI is compiled TypeScript (npm install runs the build through the `prepare` script).
import { fileURLToPath } from 'node:url';
import { followParent, relaunch, shouldRelaunch } from '../dist/src/cli/relaunch.js';

if (shouldRelaunch()) {
  // Node again, with V8's single-threaded GC (see src/cli/relaunch.ts).
  process.exitCode = await relaunch(fileURLToPath(import.meta.url), process.argv.slice(2));
} else {
  followParent();
  const { main } = await import('../dist/src/cli/main.js');
  process.exitCode = await main(process.argv.slice(2));
}
