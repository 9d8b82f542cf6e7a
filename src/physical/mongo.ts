import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The slice of `@mongodb-js/zstd@1.2.2` dsh uses (libzstd; no streaming, no prefix decode). */
export interface MongoZstd {
  compress(buf: Buffer, level: number): Promise<Buffer>;
  decompress(buf: Buffer): Promise<Buffer>;
}

let mongo: MongoZstd | undefined;

/** The package's own entry: its loader picks the platform's binding and wraps it. */
export function packageMongo(): MongoZstd {
  return createRequire(import.meta.url)('@mongodb-js/zstd') as MongoZstd;
}

/** The glibc binding the package's loader picks on Linux, by architecture, and the musl loader whose presence makes it pick another. */
const LINUX_GNU: Partial<Record<string, { binding: string; muslLoader: string }>> = {
  x64: { binding: '@mongodb-js/zstd-linux-x64-gnu', muslLoader: '/lib/ld-musl-x86_64.so.1' },
  arm64: { binding: '@mongodb-js/zstd-linux-arm64-gnu', muslLoader: '/lib/ld-musl-aarch64.so.1' },
};

/**
 * On a glibc Linux, the binding the package's loader would pick, required directly and called as the
 * package's wrapper calls it (`compress` without a level, errors re-thrown as `zstd: <message>`). The
 * loader tells glibc from musl by `process.report.getReport()`, a diagnostic report that takes 4-7 ms
 * (the package loads in ~12 ms, its binding alone in ~4; every warm command on Node 20 pays it). Where
 * the musl loader exists, or the binding does not load, the package decides (undefined here).
 */
export function directMongo(): MongoZstd | undefined {
  const gnu = process.platform === 'linux' ? LINUX_GNU[process.arch] : undefined;
  if (!gnu || existsSync(gnu.muslLoader)) return undefined;
  try {
    const fromPackage = createRequire(createRequire(import.meta.url).resolve('@mongodb-js/zstd'));
    const raw = fromPackage(gnu.binding) as { compress(data: Buffer): Promise<Buffer>; decompress(data: Buffer): Promise<Buffer> };
    if (typeof raw.compress !== 'function' || typeof raw.decompress !== 'function') return undefined;
    const wrapped = async (run: () => Promise<Buffer>): Promise<Buffer> => {
      try {
        return await run();
      } catch (e) {
        throw new Error(`zstd: ${(e as Error).message}`);
      }
    };
    return { compress: (buf) => wrapped(() => raw.compress(buf)), decompress: (buf) => wrapped(() => raw.decompress(buf)) };
  } catch {
    return undefined;
  }
}

/** Load libzstd once, on first use (Node 20 path only). */
export function loadMongo(): MongoZstd {
  mongo ??= directMongo() ?? packageMongo();
  return mongo;
}
