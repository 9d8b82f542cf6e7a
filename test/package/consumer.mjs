// The same program in plain ESM (no types), run against the packed tarball.
import { openSession, isEventOf, checkRules } from 'dsh';

function value(r) {
  if (!r.ok) throw new Error(`${r.error.class}: ${r.error.message}`);
  return r.value;
}

const [file, traceSeq, requestSeq, tornFile, corruptFile] = process.argv.slice(2);
const session = value(await openSession(file));
const inspect = value(await session.inspect());
const trace = value(await session.trace(Number(traceSeq)));
const request = value(await session.request(Number(requestSeq)));
const labelled = value(await session.events({ types: ['tool/call'] }));
const callIds = labelled.map((r) => r.event).filter((e) => isEventOf(e, 'tool/call')).map((e) => (isEventOf(e, 'tool/call') && typeof e.data?.callId === 'string' ? e.data.callId : ''));
const check = value(await session.check());

const torn = value(await openSession({ bytes: new Uint8Array(await import('node:fs').then((fs) => fs.readFileSync(tornFile))), name: 'torn.jsonl.zstd' }));
const tornCheck = value(await torn.check());
const corrupt = value(await openSession({ path: corruptFile }));
const corruptInspect = await corrupt.inspect();
const corruptError = corruptInspect.ok ? null : corruptInspect.error;
const corruptCheck = value(await corrupt.check());
const missing = await openSession({ id: 'no-such-session', root: '/nonexistent-root' });

console.log(
  JSON.stringify({
    meta: inspect.meta,
    storedEventCount: inspect.storedEventCount,
    eventCount: inspect.events.length,
    closers: inspect.closers,
    trace,
    request,
    callIds,
    checkCodes: check.findings.map((f) => f.code),
    tornCodes: tornCheck.findings.map((f) => f.code),
    tornLoaded: tornCheck.loaded,
    corruptError,
    corruptFindings: corruptCheck.findings.map((f) => ({ code: f.code, message: f.message })),
    missing: missing.ok ? null : missing.error,
    ruleCount: checkRules().length,
  }),
);
