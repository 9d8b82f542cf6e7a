/** What an indexed inspection answers from, as plain data (compared between cold, warm and extended reads). */
import type { inspectTargetIndexed } from '../../src/log/session.js';
import { foldOf } from '../../src/views/index-folds.js';
import { DISPATCHES } from '../../src/views/dispatch-fold.js';
import { corpusEntry } from '../../src/views/requests.js';

/** The dispatch index an indexed inspection answers `request` from, every entry hydrated and its messages derived. */
export async function dispatchFacts(r: Awaited<ReturnType<typeof inspectTargetIndexed>>) {
  const d = foldOf(r.folds, DISPATCHES);
  const total = r.inspection.storedEventCount + r.inspection.closers.length;
  const events = total > 0 ? await r.events!([[0, total - 1]]) : [];
  d.useEvents(() => events);
  await d.hydrate(d.index.requests, (ranges) => r.events!(ranges));
  const x = d.index;
  return {
    requests: x.requests.map((e) => ({ ...corpusEntry(e, events), messageCount: e.messageCount, firstChunkTime: e.firstChunkTime, lastChunkTime: e.lastChunkTime, chunkUsage: e.chunkUsage, messageUsage: e.messageUsage })),
    byFirstChunk: x.requestIndexByFirstChunkSeq,
    byStep: x.requestIndexesByStep,
    steps: x.steps,
    owners: [...x.owners].sort((a, b) => a[0] - b[0]),
    inSpan: [...x.inSpan].sort((a, b) => a - b),
    eventCount: x.eventCount,
  };
}

