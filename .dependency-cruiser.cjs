// The layers of src/ and which may import which (docs/architecture.md, "Layers"), checked by
// `npm run lint`. Type-only imports count: a layer that names another's types depends on it.
//
//   cli, testing, index.ts   entry points: may import anything
//   api                      the builders users call; re-exports the plan's vocabulary
//   runtime                  driver, worker hosts, tasks, rings
//   connectors               sources and sinks, behind contract.ts
//   checkpoint               checkpoint files; writes and restores operators' state
//   operators                the operators tasks run
//   state                    state stores
//   plan                     the plan's vocabulary, nodes, analysis, physical planning
//   metrics                  histograms, progress, listeners, Prometheus metrics, the web console
//   util, errors.ts          helpers that know nothing of the engine
const path = require('node:path');

/** A module of one of the given folders of src/ (or src/errors.ts for 'errors'). */
const inLayers = (...layers) =>
  `^src/(${layers.filter((l) => l !== 'errors').join('|')})/` +
  (layers.includes('errors') ? '|^src/errors\\.ts$' : '');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'Modules of src/ import one another in one direction only: no circle, type-only imports included.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-api-below-api',
      comment:
        'The builders of api/ sit above the engine: nothing the engine runs imports them. What both ' +
        'need (windows, aggregates, triggers, query options, ...) lives in plan/.',
      severity: 'error',
      from: {
        path: inLayers('plan', 'operators', 'state', 'runtime', 'checkpoint', 'metrics', 'util', 'errors'),
      },
      to: { path: '^src/api/' },
    },
    {
      name: 'api-builds-plans',
      comment:
        'api/ builds plans: it imports only api/, plan/, the connectors (source and sink specs), util/ ' +
        'and errors.ts, never the engine that runs them.',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^src/', pathNot: inLayers('api', 'plan', 'connectors', 'util', 'errors') },
    },
    {
      name: 'plan-is-pure',
      comment:
        'plan/ describes queries and knows nothing of how they run: it imports only plan/, util/ and ' +
        'errors.ts.',
      severity: 'error',
      from: { path: '^src/plan/' },
      to: {
        path: '^src/',
        pathNot: [
          inLayers('plan', 'util', 'errors'),
          // The source and sink specs a plan carries: named as types only (the rule below).
          '^src/connectors/spec\\.ts$',
        ],
      },
    },
    {
      name: 'plan-names-specs-as-types-only',
      comment: 'While the plan names the source and sink specs of connectors/, it names them as types only.',
      severity: 'error',
      from: { path: '^src/plan/' },
      to: { path: '^src/connectors/spec\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'operators-not-to-connectors',
      comment:
        'Operators get their rows and tables handed to them: they import no connector, nor the runtime ' +
        'or the checkpoint that drive them (static tables are loaded by runtime/worker/static-tables.ts).',
      severity: 'error',
      from: { path: '^src/operators/' },
      to: { path: '^src/(connectors|runtime|checkpoint)/' },
    },
    {
      name: 'connectors-below-runtime',
      comment:
        'Connectors implement src/connectors/contract.ts and reach the rings only through its ports: ' +
        'they import no runtime, operator, state store or builder. Of the checkpoint they use only its ' +
        'file helpers (files.ts) and its damage reports (damage.ts).',
      severity: 'error',
      from: { path: '^src/connectors/' },
      to: {
        path: '^src/',
        pathNot: [
          inLayers('connectors', 'plan', 'metrics', 'util', 'errors'),
          '^src/checkpoint/(files|damage)\\.ts$',
        ],
      },
    },
    {
      name: 'state-not-to-checkpoint',
      comment:
        'State stores know nothing of checkpoints: checkpoint/ writes and restores them through ' +
        'state/store-contract.ts. state/ imports only state/, util/ and errors.ts.',
      severity: 'error',
      from: { path: '^src/state/' },
      to: { path: '^src/', pathNot: inLayers('state', 'util', 'errors') },
    },
    {
      name: 'checkpoint-not-to-runtime',
      comment: 'The checkpoint is written by the runtime, not the other way round.',
      severity: 'error',
      from: { path: '^src/checkpoint/' },
      to: { path: '^src/(runtime|operators)/' },
    },
    {
      name: 'metrics-at-the-bottom',
      comment: 'metrics/ (histograms, progress, listeners) imports only metrics/, util/ and errors.ts.',
      severity: 'error',
      from: { path: '^src/metrics/' },
      to: { path: '^src/', pathNot: inLayers('metrics', 'util', 'errors') },
    },
    {
      name: 'util-at-the-bottom',
      comment: 'util/ holds helpers that know nothing of the engine: it imports only util/ and errors.ts.',
      severity: 'error',
      from: { path: '^src/util/' },
      to: { path: '^src/', pathNot: inLayers('util', 'errors') },
    },
    {
      name: 'errors-imports-nothing',
      comment: 'errors.ts is what every layer throws: it imports nothing of src/.',
      severity: 'error',
      from: { path: '^src/errors\\.ts$' },
      to: { path: '^src/', pathNot: '^src/errors\\.ts$' },
    },
    {
      name: 'no-cli-below-cli',
      comment: 'The CLI is an entry point: only the CLI imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
  ],
  options: {
    // Type-only imports (`import type`, `import { type X }`) are arrows too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: path.join(__dirname, 'tsconfig.json') },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
