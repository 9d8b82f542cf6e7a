import { createRequire } from 'node:module';

/** The slice of `@mongodb-js/zstd@1.2.2` dsh uses (libzstd; no streaming, no prefix decode). */
export interface MongoZstd {
  compress(buf: Buffer, level: number): Promise<Buffer>;
  decompress(buf: Buffer): Promise<Buffer>;
}

let mongo: MongoZstd | undefined;

/** Load the native package once, on first use (Node 20 path only). */
export function loadMongo(): MongoZstd {
  mongo ??= createRequire(import.meta.url)('@mongodb-js/zstd') as MongoZstd;
  return mongo;
}
