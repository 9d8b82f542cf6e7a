/**
 * Artifact identity: what a dataset file was built from. The identity is the
 * sha256 of the artifact's bytes (an append, a repair or a rewrite changes
 * it; a copy or a touch does not). Hashing is skipped when the file's size,
 * mtime and inode equal what the manifest recorded for that identity, the way
 * make and rsync trust a stat.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

export interface ArtifactIdentity {
  identity: string;
  stamp: FileStamp;
}

/** The identity of an artifact; `known` (from a previous run) is reused when the stamp is unchanged. */
export function artifactIdentity(file: string, known?: ArtifactIdentity): ArtifactIdentity {
  const fd = openSync(file, 'r');
  try {
    const st = fstatSync(fd);
    const stamp: FileStamp = { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
    if (known && known.stamp.size === stamp.size && known.stamp.mtimeMs === stamp.mtimeMs && known.stamp.ino === stamp.ino) return { identity: known.identity, stamp };
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(1 << 20);
    let at = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, at);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      at += n;
    }
    return { identity: `sha256:${hash.digest('hex')}`, stamp };
  } finally {
    closeSync(fd);
  }
}
