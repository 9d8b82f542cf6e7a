/**
 * What `bin/dsh.js` needs before the CLI's modules load (`src/cli/prestart.ts`): three small modules,
 * not the library's whole surface, so that the hash worker starts first.
 */
export { ARTIFACT_NAMES } from '../core/paths.js';
export { cacheConfig, cacheDisabledByEnv, readPointer } from '../log/index/cache.js';
export { prestartHash, prestartHashWorker, WORKER_MIN_BYTES } from '../log/index/content-hash.js';
