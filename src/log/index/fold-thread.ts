/**
 * Worker-thread entry of the folds that run beside a validating pass
 * (`remote-folds.ts`): imports each fold by the module and export name it
 * declares (`PersistentFold.offThread`), feeds its builder the events that
 * arrive on the wire (`fold-wire.ts`), and at the end answers each fold's
 * saved bytes (null: that fold cannot be kept, or it failed).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { FoldBuilder, PersistentFold } from './session-index.js';
import { readWire, type WireBatch } from './fold-wire.js';
import type { SessionEvent } from '../types.js';
import { joined } from './codec.js';

interface Wanted {
  tag: number;
  module: string;
  name: string;
}

const port = parentPort!;
const wanted = (workerData as { folds: Wanted[] }).folds;
let builders: [number, FoldBuilder<unknown>][] = [];
const folds: PersistentFold[] = [];
let failed = false;
try {
  for (const w of wanted) {
    const fold = ((await import(w.module)) as Record<string, PersistentFold>)[w.name];
    if (!fold || fold.tag !== w.tag) throw new Error(`fold ${w.name} (tag ${w.tag}) not found in ${w.module}`);
    folds.push(fold);
    builders.push([w.tag, fold.create()]);
  }
} catch {
  failed = true;
  builders = [];
}
const observers = builders.map(([, b]) => b);
// Every fold here must allow a moved row member (`readWire`): all of them say so.
const cursor = wanted.length > 0 && folds.every((f) => f.offThread?.rowCursor === true);
const observe = (e: SessionEvent) => {
  for (let i = 0; i < observers.length; i++) (observers[i] as FoldBuilder<unknown>).observe(e);
};

port.on('message', (msg: { batch?: WireBatch; end?: { closers: WireBatch; count: number } }) => {
  if (msg.batch) {
    if (failed) return;
    try {
      readWire(msg.batch, observe, cursor);
    } catch {
      failed = true;
    }
    return;
  }
  if (!msg.end) return;
  const out: [number, Uint8Array | null][] = [];
  if (!failed) {
    try {
      const closers: SessionEvent[] = [];
      readWire(msg.end.closers, (e) => closers.push(e));
      for (const [, b] of builders) b.end?.(closers, msg.end.count);
      for (const [tag, b] of builders) {
        const bytes = b.encode();
        out.push([tag, bytes ? joined(bytes) : null]);
      }
    } catch {
      out.length = 0;
    }
  }
  port.postMessage({ bytes: out }, out.flatMap(([, b]) => (b ? [b.buffer as ArrayBuffer] : [])));
});
