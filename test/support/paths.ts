import { fileURLToPath } from 'node:url';

/** The repository root, from a compiled test in dist/test/** or dist/bench/**. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const QPGATE_BIN = fileURLToPath(new URL('../../../bin/qpgate.js', import.meta.url));
