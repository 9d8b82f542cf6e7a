import { describe, expect, it } from 'vitest';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { loadedFromInspection, surfaceView, StreamingSurface } from '../src/views/messages.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

describe.skipIf(!HAVE_CORPUS)('streaming surface view', () => {
  it('equals the collected surface view on every corpus session, at the end and at every tenth seq', async () => {
    let compared = 0;
    for (const c of corpusCases()) {
      if (c.expected.inspection.error) continue;
      const r = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const loaded = loadedFromInspection(r);
      const points: (number | undefined)[] = [undefined];
      for (let s = 0; s < loaded.events.length; s += 10) points.push(s);
      for (const at of points) {
        const stream = new StreamingSurface(at);
        for (const e of loaded.events) stream.observe(e);
        expect(stream.view(loaded.sessionId, loaded.header, loaded.storedEventCount)).toEqual(surfaceView(loaded, at));
        compared++;
      }
      // The final view also equals DSH's derived.messages.
      const end = new StreamingSurface();
      for (const e of loaded.events) end.observe(e);
      expect(end.view(loaded.sessionId, loaded.header, loaded.storedEventCount).messages).toEqual(c.expected.derived.messages);
    }
    expect(compared).toBeGreaterThan(1000);
  });
});
