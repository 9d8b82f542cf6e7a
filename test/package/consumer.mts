// A downstream TypeScript program using dsh's public API (type-checked against the packed tarball).
import { openSession, isEventOf, checkRules, type DshError, type EventTrace, type InspectView, type RequestDocument, type Result, type SessionReport } from 'dsh';

function value<T>(r: Result<T>): T {
  if (!r.ok) throw new Error(`${r.error.class}: ${r.error.message}`);
  return r.value;
}

const [file, traceSeq, requestSeq, tornFile, corruptFile] = process.argv.slice(2) as [string, string, string, string, string];
const session = value(await openSession(file));
const inspect: InspectView = value(await session.inspect());
const trace: EventTrace = value(await session.trace(Number(traceSeq)));
const request: RequestDocument = value(await session.request(Number(requestSeq)));
const labelled = value(await session.events({ types: ['tool/call'] }));
const callIds: string[] = labelled.map((r) => r.event).filter((e) => isEventOf(e, 'tool/call')).map((e) => (isEventOf(e, 'tool/call') && typeof e.data?.callId === 'string' ? e.data.callId : ''));
const check: SessionReport = value(await session.check());

const torn = value(await openSession({ bytes: new Uint8Array(await import('node:fs').then((fs) => fs.readFileSync(tornFile))), name: 'torn.jsonl.zstd' }));
const tornCheck = value(await torn.check());
const corrupt = value(await openSession({ path: corruptFile }));
const corruptInspect = await corrupt.inspect();
const corruptError: DshError | null = corruptInspect.ok ? null : corruptInspect.error;
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
