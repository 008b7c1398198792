/**
 * The Arrow package, loaded on first use: it takes about half a second to import, which a thread
 * without Arrow code should not pay. A thread whose plan has Arrow operators awaits
 * {@link loadArrow} before it builds them; then {@link arrow} hands the module out synchronously.
 * Both are the ESM build a job module's own `import 'apache-arrow'` gets, so the classes the
 * engine and user code see are the same (Arrow checks `instanceof`).
 */
type ArrowModule = typeof import('apache-arrow');
type VectorLoaderClass = typeof import('apache-arrow/visitor/vectorloader').VectorLoader;

let loaded: { module: ArrowModule; VectorLoader: VectorLoaderClass } | undefined;
let loading: Promise<void> | undefined;

export function loadArrow(): Promise<void> {
  loading ??= Promise.all([import('apache-arrow'), import('apache-arrow/visitor/vectorloader')]).then(
    ([module, loader]) => {
      loaded = { module, VectorLoader: loader.VectorLoader };
    },
  );
  return loading;
}

export function arrow(): ArrowModule {
  if (loaded === undefined) throw new Error('internal: apache-arrow used before loadArrow()');
  return loaded.module;
}

/** Arrow's loader of a record batch's vectors from an IPC message body (see ipc.ts). */
export function vectorLoader(): VectorLoaderClass {
  if (loaded === undefined) throw new Error('internal: apache-arrow used before loadArrow()');
  return loaded.VectorLoader;
}
