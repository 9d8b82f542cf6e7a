/**
 * The content hash a session index is keyed by: sha256 over every byte of the artifact, as a
 * two-level tree (the sha256 of its 16 MiB pieces' sha256s, in order), so that on a file the
 * pieces are hashed on two threads: a worker thread and this one each take the next piece not yet
 * taken (a shared counter) until none is left, the worker reading through the same file descriptor
 * (the very bytes this thread reads, even if the path is replaced meanwhile). A changed byte
 * anywhere changes its piece's digest and so the key. Hashing is most of a warm command's time on a
 * big log (0.85 s of CPU for the 679 MB bench log).
 */
import os from 'node:os';
import { createHash, type Hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { ByteSource } from '../../physical/source.js';

export const PIECE_BYTES = 16 << 20;
const READ_CHUNK = 1 << 20;
/** A file of fewer pieces is hashed on this thread alone (a worker takes ~30 ms to start)... */
const WORKER_MIN_PIECES = 4;
/** A file this big is hashed on the worker too, whether or not this thread has other work meanwhile. */
export const WORKER_MIN_BYTES = WORKER_MIN_PIECES * PIECE_BYTES;
/** ...unless it is hashed in the background and this big: this thread then has a pass to run meanwhile. */
const BACKGROUND_MIN_BYTES = 4 << 20;

interface Pieces {
  /** [piece number, its sha256]. */
  digests: [number, Uint8Array][];
  /** The sha256 of the piece holding `cut` up to `cut` (when `cut` is inside a piece). */
  cut?: Uint8Array;
}

/**
 * The sha256 of the pieces `claim` hands out (a piece number, or one past the last when none is
 * left) of `size` bytes that `read` reads (into a buffer from an offset, returning how many bytes it
 * read), and of the piece holding `cut` up to `cut` if it hashes that piece. Self-contained, no
 * imports (it is also the hash worker's source): everything comes in.
 */
function hashPieces(read: (into: Buffer, at: number) => number, hash: () => Hash, size: number, piece: number, chunk: number, claim: () => number, cut: number): Pieces {
  const buf = Buffer.allocUnsafe(Math.max(1, Math.min(chunk, size)));
  const digests: [number, Uint8Array][] = [];
  let cutDigest: Uint8Array | undefined;
  const count = Math.ceil(size / piece);
  for (let p = claim(); p < count; p = claim()) {
    const h = hash();
    const end = Math.min(size, (p + 1) * piece);
    for (let at = p * piece; at < end; ) {
      const stop = Math.min(end, at + chunk, at < cut ? cut : Infinity);
      h.update(buf.subarray(0, read(buf.subarray(0, stop - at), at)));
      at = stop;
      if (at === cut && cut % piece !== 0) cutDigest = h.copy().digest();
    }
    digests.push([p, h.digest()]);
  }
  return cutDigest ? { digests, cut: cutDigest } : { digests };
}

function threads(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** The hash worker's source: it waits for one job (a message), hashes its pieces, answers, and is done. */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { readSync } = require('node:fs');
const { createHash } = require('node:crypto');
const hashPieces = ${hashPieces.toString()};
parentPort.once('message', (w) => {
  const next = new Int32Array(w.shared);
  const read = (into, at) => {
    let done = 0;
    while (done < into.length) {
      const n = readSync(w.fd, into, done, into.length - done, at + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  };
  parentPort.postMessage(hashPieces(read, () => createHash('sha256'), w.size, w.piece, w.chunk, () => Atomics.add(next, 0, 1), w.cut));
});
`;

/** `hashPieces` on a worker thread reading through `fd`, taking pieces from the counter in `shared`. */
function hashOnWorker(fd: number, size: number, piece: number, cut: number, shared: SharedArrayBuffer): { worker: Worker; done: Promise<Pieces> } {
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  const done = new Promise<Pieces>((resolve, reject) => {
    worker.once('message', (m: Pieces) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the hash worker exited (${code})`)));
  });
  worker.postMessage({ fd, size, piece, chunk: READ_CHUNK, cut, shared });
  return { worker, done };
}

/**
 * The sha256 tree hash of every byte of `source`; with `prefixBytes` (less than its size), also
 * that of its first `prefixBytes` bytes (what the whole hash of a file of that size would be),
 * from the same pass. `background`: a file big enough for the worker is hashed on it while this
 * thread goes on (`started` is handed a cancel, which stops the worker and rejects the hash, and a
 * help, which this thread calls once it has nothing else to do: it then hashes the pieces the
 * worker has not taken yet, before it waits; a worker that fails leaves its pieces to this thread).
 */
export async function contentHash(
  source: ByteSource,
  prefixBytes?: number,
  piece = PIECE_BYTES,
  how: HashHow = {},
): Promise<{ sha256: Buffer; prefixSha256?: Buffer }> {
  const cut = prefixBytes !== undefined && prefixBytes < source.size ? prefixBytes : -1;
  return treeHash(source, cut, piece, how);
}

type HashHow = { background?: boolean; started?: (cancel: () => void, help: () => void) => void };

/** `contentHash` with the cut it takes (-1: none). */
async function treeHash(source: ByteSource, cut: number, piece: number, how: HashHow): Promise<{ sha256: Buffer; prefixSha256?: Buffer }> {
  const size = source.size;
  const read = source.readInto
    ? (into: Buffer, at: number) => source.readInto!(into, at)
    : (into: Buffer, at: number) => source.read(at, at + into.length).copy(into);
  const hash = () => createHash('sha256');
  const count = Math.ceil(size / piece);
  const fd = source.descriptor;
  // The next piece to take, shared with the worker.
  const next = new Int32Array(new SharedArrayBuffer(4));
  let helper: ReturnType<typeof hashOnWorker> | undefined;
  const worth = count >= WORKER_MIN_PIECES || (how.background === true && size >= BACKGROUND_MIN_BYTES);
  if (worth && fd !== undefined && threads() > 1) {
    try {
      helper = hashOnWorker(fd, size, piece, cut, next.buffer as SharedArrayBuffer);
      // A worker that fails leaves its pieces to this thread (below).
      helper.done.catch(() => undefined);
    } catch {
      helper = undefined;
    }
  }
  const digests: (Uint8Array | undefined)[] = new Array(count);
  let cutDigest: Uint8Array | undefined;
  const take = (got: Pieces) => {
    for (const [p, d] of got.digests) digests[p] = d;
    cutDigest ??= got.cut;
  };
  if (helper && how.background) {
    // This thread has other work (the validating pass): the worker hashes the pieces, this thread
    // takes the ones left when it helps (once its own work is done), and what a failed worker left.
    const worker = helper.worker;
    let cancelled = false;
    let helped: Pieces | undefined;
    how.started?.(
      () => {
        cancelled = true;
        void worker.terminate();
      },
      () => {
        if (!cancelled && !helped) helped = hashPieces(read, hash, size, piece, READ_CHUNK, () => Atomics.add(next, 0, 1), cut);
      },
    );
    take((await helper.done.catch(() => undefined)) ?? { digests: [] });
    void worker.terminate();
    if (cancelled) throw new Error('the content hash was cancelled');
    // Pieces this thread took when it helped (it helps synchronously, so before the worker is done, or not at all).
    if (helped) take(helped);
    helper = undefined;
  } else take(hashPieces(read, hash, size, piece, READ_CHUNK, () => Atomics.add(next, 0, 1), cut));
  if (helper) {
    // Every piece is taken now: those this thread did not hash, the worker did. A worker that took
    // none is not waited for.
    if (digests.includes(undefined)) take((await helper.done.catch(() => undefined)) ?? { digests: [] });
    void helper.worker.terminate();
  }
  // What a failed worker took: each such piece on its own (a claim that hands out `p` once, then none).
  for (let p = 0; p < count; p++) {
    if (digests[p] !== undefined) continue;
    const once = [p, count];
    take(hashPieces(read, hash, size, piece, READ_CHUNK, () => once.shift() ?? count, cut));
  }
  const root = (whole: number, partial?: Uint8Array) => {
    const h = createHash('sha256');
    for (let p = 0; p < whole; p++) h.update(digests[p] as Uint8Array);
    if (partial) h.update(partial);
    return h.digest();
  };
  const sha256 = root(count);
  if (cut < 0) return { sha256 };
  const partial = cut % piece !== 0 ? cutDigest : undefined;
  return { sha256, prefixSha256: root(Math.floor(cut / piece), partial) };
}
