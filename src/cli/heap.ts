/**
 * The young generation of the `dsh` process (see bin/dsh.js): pinned at V8's initial size (1 MiB
 * semi-spaces on Node 20) for memory, and let grow (V8's own policy, up to its 16 MiB semi-spaces)
 * once a command is known to read a large log, where the pinned size is a time cost: each
 * scavenge of a 1 MiB space still finds the frame being parsed alive and promotes it, so the old
 * generation fills with short-lived events and is marked again and again (2 GB bench log,
 * `inspect`: 12,214 scavenges and 205 full collections, 39% of the CPU profile in the collector).
 * Measured on the bench logs (README, benchmarks): `inspect` on the 2 GB log 41.9 -> 30.2 s, peak
 * RSS 156 -> 191 MiB; on the 50 MB log growing would cost 87 -> 119 MiB, so small logs stay pinned.
 * Only the CLI changes V8 flags: the library never does (an embedder owns its process).
 */
import v8 from 'node:v8';

/** Logs of at least this many bytes (the file: compressed for zstd) let the young generation grow. */
const YOUNG_GROWTH_BYTES = 64 * 1024 * 1024;

let pinned = false;

/** Pin the young generation (bin/dsh.js, unless the user chose its size). */
export function pinYoungGeneration(): void {
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  pinned = true;
}

/** A command reads a log of `bytes`: from {@link YOUNG_GROWTH_BYTES} on, let V8 grow the young generation again. */
export function sizeYoungGenerationFor(bytes: number): void {
  if (!pinned || bytes < YOUNG_GROWTH_BYTES) return;
  v8.setFlagsFromString('--semi-space-growth-factor=2');
  pinned = false;
}
