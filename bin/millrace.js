#!/usr/bin/env node
// The CLI is compiled TypeScript (npm install runs the build through the `prepare` script).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
