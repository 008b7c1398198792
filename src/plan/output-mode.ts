/** Spark's output modes. `append` is the default. */
export type OutputMode = 'append' | 'update' | 'complete';

export const OUTPUT_MODES: readonly OutputMode[] = ['append', 'update', 'complete'];
