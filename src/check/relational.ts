/**
 * Offline replays of DSH's log-scoped invariant companions over the logical
 * view (stored events after normalization, plus crash closers: what
 * `session.events` holds after load). Each replay stops at its first failure,
 * as DSH's `fail` throws; messages are DSH's text (without the registry's
 * `invariant violated by "<package>": ` prefix, which is added by the caller).
 */
import { splitPairs, toolPairsOf, type ToolPairs } from '../views/tool-pairs.js';
import { AttemptBoundaries } from '../views/attempts.js';
import type { RuleCode } from '../core/rules.js';
import type { SessionEvent } from '../log/types.js';
import { read } from '../log/payloads.js';
import { RowChunk } from '../log/pruned-event.js';
import { SurfaceFold, isSurfaceEligibleType } from '../log/surface.js';
import { mapJsonLeaves, toJson } from '../core/json.js';
import { stepKey } from '../core/keys.js';
import { rec } from '../core/records.js';

export interface RelationalFinding {
  code: RuleCode;
  seq: number;
  message: string;
  /** The DSH package whose invariant this is (empty for dsh's own rules). */
  pkg?: string;
}

class Fail extends Error {
  constructor(readonly code: RuleCode, message: string) {
    super(message);
  }
}

const failWith = (code: RuleCode) => (message: string): never => {
  throw new Fail(code, message);
};

/** The fields the core invariant reads (unchecked: as DSH writes them). */
interface CoreReads {
  turn: number;
  step: number;
  callId: unknown;
  message: { source: { callId: unknown }; content: { isError?: unknown }[] };
  error?: { code?: unknown };
}

/** What the retry look-back reads of a step/start, llm/retry or request/header (unguarded, as DSH's replay reads it). */
interface RetryReads {
  turn: unknown;
  step: unknown;
  retry?: number;
  retryId?: unknown;
  provider?: unknown;
  policyKey?: unknown;
  header: { config: { provider: string | undefined } };
}

/** What the F1 replay reads of a compaction/summary (unguarded, as DSH's replay reads it: a missing field throws). */
interface SummaryReads {
  shadowedSeqs: unknown[];
  shadowedRange: { start: unknown; end: unknown };
  shadowedTokenCount: number;
}

/** What the F2 replay reads of an llm/retry's failure once it is known to be an object. */
interface FailureReads {
  message: unknown;
  code: unknown;
  status?: number;
  providerRetryAfterMs?: number;
  requestId?: unknown;
}

/** A replay fed one event at a time; the first failure (or a TypeError, as DSH's own replay would throw) becomes one finding. */
export interface ReplayObserver {
  observe(event: SessionEvent): void;
  findings(): RelationalFinding[];
}

/**
 * A replay as a streaming observer: `body` takes each event (throwing `Fail` for a finding);
 * `passes`, when given, takes an event first and returns true when it has done for it all the
 * body would do, finding nothing (a path for the common case; anything else goes to the body).
 */
function observer(pkg: string, defaultCode: RuleCode, body: (event: SessionEvent, index: number) => void, passes?: (event: SessionEvent) => boolean): ReplayObserver {
  let index = 0;
  let found: RelationalFinding[] | undefined;
  return {
    observe(event) {
      if (found) return;
      if (passes?.(event)) {
        index++;
        return;
      }
      try {
        body(event, index++);
      } catch (error) {
        found = [
          error instanceof Fail
            ? { code: error.code, seq: event.seq, message: error.message, pkg }
            : { code: defaultCode, seq: event.seq, message: `replay of ${event.type} threw: ${(error as Error).message}`, pkg },
        ];
      }
    },
    findings: () => found ?? [],
  };
}

/** Run a replay over an array. */
function replay(pkg: string, defaultCode: RuleCode, events: readonly SessionEvent[], body: (event: SessionEvent, index: number) => void): RelationalFinding[] {
  const o = observer(pkg, defaultCode, body);
  for (const e of events) o.observe(e);
  return o.findings();
}

// ---------------------------------------------------------------- E (dsh-session)

const TOOL_NOT_STARTED = 'TOOL_NOT_STARTED';

/** The dsh-session invariant replay as a streaming observer. */
export function sessionInvariantObserver(): ReplayObserver {
  let lastSeq = -1;
  let openTurn: unknown = null;
  let openStep: unknown = null;
  let nextTurn = 1;
  let nextStep = 1;
  const pending = new Set<unknown>();
  const requireOpenStep = (code: RuleCode, kind: string, turn: unknown, step: unknown) => {
    if (openTurn !== turn || openStep !== step) {
      failWith(code)(`${kind} names turn ${turn}/step ${step} but open is turn ${openTurn}/step ${openStep}`);
    }
  };
  return observer('@deepseek-ai/dsh-session', 'DSH-E5', (event) => {
    if (event.seq <= lastSeq) failWith('DSH-E1')(`seq must strictly increase: saw ${event.seq} after ${lastSeq}`);
    // Read as DSH's invariant reads it, unguarded: a malformed payload throws its TypeError (one finding).
    const data = event.data as unknown as CoreReads;
    switch (event.type) {
      case 'turn/start':
        if (openTurn !== null) failWith('DSH-E2')(`turn/start ${data.turn} while turn ${openTurn} is still open`);
        if (data.turn !== nextTurn) failWith('DSH-E2')(`turn/start expected turn ${nextTurn}, got ${data.turn}`);
        openTurn = data.turn;
        nextStep = 1;
        break;
      case 'turn/end':
        if (openTurn !== data.turn) failWith('DSH-E3')(`turn/end ${data.turn} does not match open turn ${openTurn}`);
        if (openStep !== null) failWith('DSH-E3')(`turn/end ${data.turn} while step ${openStep} is still open`);
        openTurn = null;
        nextTurn += 1;
        break;
      case 'step/start':
        if (openTurn !== data.turn) failWith('DSH-E4')(`step/start in turn ${data.turn} but open turn is ${openTurn}`);
        if (openStep !== null) failWith('DSH-E4')(`step/start ${data.step} while step ${openStep} is still open`);
        if (data.step !== nextStep) failWith('DSH-E4')(`step/start expected step ${nextStep} in turn ${data.turn}, got ${data.step}`);
        openStep = data.step;
        break;
      case 'step/end':
        requireOpenStep('DSH-E5', 'step/end', data.turn, data.step);
        pending.clear();
        openStep = null;
        nextStep += 1;
        break;
      case 'assistant/chunk':
      case 'assistant/message':
        requireOpenStep('DSH-E5', event.type, data.turn, data.step);
        break;
      case 'tool/call':
        requireOpenStep('DSH-E5', 'tool/call', data.turn, data.step);
        pending.add(data.callId);
        break;
      case 'tool/result': {
        if (event.surfaceOp !== 'append') {
          if (openTurn === null) failWith('DSH-E7')('tool/result surface replacement appended outside any open turn');
          break;
        }
        requireOpenStep('DSH-E5', 'tool/result', data.turn, data.step);
        const callId = data.message.source.callId;
        const synthetic = data.message.content[0].isError === true && data.error?.code === TOOL_NOT_STARTED;
        if (!pending.has(callId) && !synthetic) failWith('DSH-E6')(`tool/result for ${callId} with no prior tool/call in this step`);
        pending.delete(callId);
        break;
      }
      case 'todo/write':
      case 'request/header':
      case 'request/context':
        if (openTurn === null) failWith('DSH-E8')(`${event.type} appended outside any open turn (core execution events must be turn-enclosed)`);
        break;
      default:
        break;
    }
    lastSeq = event.seq;
  }, (event) => {
    // A packed row's lean chunk in the open step (nearly every event of a long log): the body's
    // assistant/chunk case, when it finds nothing.
    if (!(event instanceof RowChunk) || !(event.seq > lastSeq)) return false;
    const data = event.data as { turn: unknown; step: unknown };
    if (openTurn !== data.turn || openStep !== data.step) return false;
    lastSeq = event.seq;
    return true;
  });
}

export function sessionInvariant(events: readonly SessionEvent[]): RelationalFinding[] {
  const o = sessionInvariantObserver();
  for (const e of events) o.observe(e);
  return o.findings();
}

// ---------------------------------------------------------------- F1 (dsh-compaction)

interface Bracket {
  compactionId: unknown;
  sourceCommandId: unknown;
  startSeq: number;
  turn: number | null;
  summarized: boolean;
}

function inheritedOrphanStartSeqs(events: readonly SessionEvent[]): Set<number> {
  const stale = new Set<number>();
  let open: number | undefined;
  for (const e of events) {
    if (e.type === 'compaction/start') open = e.seq;
    else if (e.type === 'compaction/end') open = undefined;
    else if (e.type === 'session/end-seed') {
      if (open !== undefined) stale.add(open);
      open = undefined;
    }
  }
  return stale;
}

export function compactionInvariant(events: readonly SessionEvent[]): RelationalFinding[] {
  const fail = failWith('DSH-F1');
  const stale = inheritedOrphanStartSeqs(events);
  let openTurn: number | null = null;
  let bracket: Bracket | undefined;
  const validateId = (value: unknown, label: string) => {
    if (typeof value !== 'string' || value.length === 0) fail(`${label} must be a non-empty string`);
  };
  const validateSourceCommandId = (type: string, value: unknown, expected: unknown) => {
    if (value !== undefined) validateId(value, `${type} sourceCommandId`);
    if (value !== expected) fail(`${type} sourceCommandId ${String(value)} does not match compaction/start sourceCommandId ${String(expected)}`);
  };
  const validateOwner = (owner: number | null, type: string) => {
    if (owner === null) {
      if (openTurn !== null) fail(`${type} is standalone but turn ${openTurn} is open`);
      return;
    }
    if (openTurn === null) fail(`${type} for turn ${owner} appended outside any open turn`);
    if (owner !== openTurn) fail(`${type} names turn ${owner} but open turn is ${openTurn}`);
  };
  return replay('@deepseek-ai/dsh-compaction', 'DSH-F1', events, (event) => {
    if ((event.type === 'turn/start' || event.type === 'turn/end') && bracket !== undefined && !stale.has(bracket.startSeq)) {
      const owner = bracket.turn === null ? 'standalone compaction' : `compaction for turn ${bracket.turn}`;
      fail(`${event.type} cannot cross an open ${owner}`);
    }
    const data = rec(event.data);
    if (event.type === 'session/end-seed') bracket = undefined;
    else if (
      event.type === 'user/message' &&
      event.surfaceOp !== undefined &&
      event.surfaceOp !== 'append' &&
      rec(data['source'])['kind'] === 'plugin' &&
      rec(data['source'])['plugin'] === 'compact'
    ) {
      const source = rec(data['source']);
      validateId(source['compactionId'], 'compaction checkpoint compactionId');
      if (source['sourceCommandId'] !== undefined) validateId(source['sourceCommandId'], 'compaction checkpoint sourceCommandId');
      if (bracket === undefined) fail('compaction checkpoint has no matching compaction/start');
      if (source['compactionId'] !== bracket!.compactionId) {
        fail(`compaction checkpoint id ${source['compactionId']} does not match compaction/start id ${bracket!.compactionId}`);
      }
      validateSourceCommandId('compaction checkpoint', source['sourceCommandId'], bracket!.sourceCommandId);
    } else if (event.type === 'compaction/start') {
      validateId(data['compactionId'], 'compaction/start compactionId');
      if (data['sourceCommandId'] !== undefined) validateId(data['sourceCommandId'], 'compaction/start sourceCommandId');
      if (bracket !== undefined) {
        const owner = bracket.turn === null ? 'standalone compaction' : `turn ${bracket.turn}`;
        fail(`compaction/start while ${owner} is still compacting`);
      }
      const turn = data['turn'] as number | null;
      validateOwner(turn, event.type);
      bracket = { compactionId: data['compactionId'], sourceCommandId: data['sourceCommandId'], startSeq: event.seq, turn, summarized: false };
    } else if (event.type === 'compaction/summary') {
      validateId(data['compactionId'], 'compaction/summary compactionId');
      if (data['sourceCommandId'] !== undefined) validateId(data['sourceCommandId'], 'compaction/summary sourceCommandId');
      if (bracket === undefined) fail('compaction/summary has no matching compaction/start');
      const open = bracket!;
      if (data['compactionId'] !== open.compactionId) fail(`compaction/summary id ${data['compactionId']} does not match compaction/start id ${open.compactionId}`);
      validateSourceCommandId('compaction/summary', data['sourceCommandId'], open.sourceCommandId);
      validateOwner(open.turn, event.type);
      if (open.summarized) fail('compaction/summary repeated within one compaction');
      const summary = data as unknown as SummaryReads;
      const seqs = summary.shadowedSeqs;
      if (seqs.length === 0) fail('compaction/summary shadowedSeqs must be non-empty');
      if (seqs[0] !== summary.shadowedRange.start || seqs.at(-1) !== summary.shadowedRange.end) {
        fail('compaction/summary shadowedRange must match the first and last shadowedSeqs');
      }
      if (!Number.isSafeInteger(summary.shadowedTokenCount) || summary.shadowedTokenCount < 0) {
        fail('compaction/summary shadowedTokenCount must be a non-negative safe integer');
      }
      bracket = { ...open, summarized: true };
    } else if (event.type === 'compaction/end') {
      validateId(data['compactionId'], 'compaction/end compactionId');
      if (data['sourceCommandId'] !== undefined) validateId(data['sourceCommandId'], 'compaction/end sourceCommandId');
      if (bracket === undefined) fail('compaction/end has no matching compaction/start');
      const open = bracket!;
      if (data['compactionId'] !== open.compactionId) fail(`compaction/end id ${data['compactionId']} does not match compaction/start id ${open.compactionId}`);
      validateSourceCommandId('compaction/end', data['sourceCommandId'], open.sourceCommandId);
      if (data['turn'] !== open.turn) fail(`compaction/end owner ${String(data['turn'])} does not match compaction/start owner ${String(open.turn)}`);
      validateOwner(open.turn, event.type);
      if (data['error'] === undefined && !open.summarized) fail('successful compaction/end requires one compaction/summary');
      bracket = undefined;
    }
    if (event.type === 'turn/start') openTurn = data['turn'] as number | null;
    else if (event.type === 'turn/end') openTurn = null;
  });
}

/** §9.4: the lock is active iff the latest compaction marker is a start after the latest end-seed. */
export function orphanCompactionLock(events: readonly SessionEvent[]): RelationalFinding[] {
  let endSeed = -1;
  let marker: SessionEvent | undefined;
  for (const e of events) {
    if (e.type === 'session/end-seed') endSeed = e.seq;
    else if (e.type === 'compaction/start' || e.type === 'compaction/end') marker = e;
  }
  if (marker?.type !== 'compaction/start' || marker.seq < endSeed) return [];
  const id = rec(marker.data)['compactionId'];
  return [
    {
      code: 'DSH-F4',
      seq: marker.seq,
      message: `compaction/start ${toJson(id)} (seq ${marker.seq}) has no compaction/end and no later session/end-seed: the compaction lock is still active`,
    },
  ];
}

// ---------------------------------------------------------------- F2 (dsh-llm-retry)

const MAX_TIMER_DELAY_MS = 2_147_483_647;

function findLast(events: readonly SessionEvent[], before: number, pred: (e: SessionEvent) => boolean): SessionEvent | undefined {
  for (let i = before - 1; i >= 0; i--) if (pred(events[i]!)) return events[i];
  return undefined;
}

function providerForOpenStep(events: readonly SessionEvent[], before: number, turn: unknown, step: unknown): string | undefined {
  let startIndex = -1;
  for (let i = before - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.type === 'step/start' && (e.data as unknown as RetryReads).turn === turn && (e.data as unknown as RetryReads).step === step) {
      startIndex = i;
      break;
    }
  }
  if (startIndex < 0) return undefined;
  for (let i = startIndex + 1; i < before; i++) if (events[i]!.type === 'step/end' || events[i]!.type === 'turn/end') return undefined;
  const header = findLast(events, before, (e) => e.type === 'request/header');
  return header === undefined ? undefined : (header.data as unknown as RetryReads).header.config.provider;
}

/**
 * A `===`-exact map key for primitive values (typed, strings quoted, so `1` and `"1"` or `null` and
 * `undefined` never share one); undefined for an object, which (each kept event being its own copy)
 * is never `===` to a value of another event.
 */
function primitiveKey(values: readonly unknown[]): string | undefined {
  let key = '';
  for (const v of values) {
    if (typeof v === 'string') key += 's' + JSON.stringify(v);
    else if (typeof v === 'number' && Number.isNaN(v)) return undefined;
    else if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean') key += (v === null ? 'null' : typeof v) + ':' + String(v) + ';';
    else return undefined;
  }
  return key;
}

/**
 * What the retry replay looks back for, kept as it goes instead of scanning every earlier event
 * for each retry (quadratic on a long log: a quarter of `check`'s time on the bench's 2 GB log).
 * It holds the events before `index` once {@link upTo} has run; each earlier `llm/retry` and
 * `llm/retry-started` passed the replay (it stops at its first failure), so their fields have the
 * shapes it checked.
 */
class RetryLookBack {
  private next = 0;
  /** The last llm/retry of each provider-policy chain (turn, step, provider, policyKey). */
  readonly lastOfChain = new Map<string, SessionEvent>();
  /** Every retryId an llm/retry or llm/retry-started has used. */
  readonly usedIds = new Set<string>();
  /** The last llm/retry of each (retryId, retry). */
  readonly scheduled = new Map<string, SessionEvent>();
  /** The (retryId, retry) of every llm/retry-started. */
  readonly started = new Set<string>();

  constructor(private readonly events: readonly SessionEvent[]) {}

  upTo(index: number): void {
    for (; this.next < index; this.next++) {
      const e = this.events[this.next]!;
      if (e.type !== 'llm/retry' && e.type !== 'llm/retry-started') continue;
      const d = e.data as unknown as RetryReads;
      if (typeof d.retryId === 'string') this.usedIds.add(d.retryId);
      const attempt = primitiveKey([d.retryId, d.retry]);
      if (e.type === 'llm/retry') {
        const chain = primitiveKey([d.turn, d.step, d.provider, d.policyKey]);
        if (chain !== undefined) this.lastOfChain.set(chain, e);
        if (attempt !== undefined) this.scheduled.set(attempt, e);
      } else if (attempt !== undefined) this.started.add(attempt);
    }
  }
}

export function retryInvariant(events: readonly SessionEvent[]): RelationalFinding[] {
  const fail = failWith('DSH-F2');
  const back = new RetryLookBack(events);
  return replay('@deepseek-ai/dsh-llm-retry', 'DSH-F2', events, (event, index) => {
    back.upTo(index);
    if (event.type === 'llm/retry') {
      const d = rec(event.data);
      const { retryId, turn, step, provider, mode, policyKey, retry, delayMs } = d;
      if (typeof retryId !== 'string' || retryId.length === 0) fail('llm/retry retryId must be a non-empty string');
      const failure = d['failure'] as FailureReads;
      if (typeof failure !== 'object' || failure === null) fail('llm/retry failure must be an object');
      if (typeof failure.message !== 'string' || failure.message.length === 0) fail('llm/retry failure.message must be a non-empty string');
      if (typeof failure.code !== 'string' || failure.code.length === 0) fail('llm/retry failure.code must be a non-empty string');
      if (failure.status !== undefined && (!Number.isInteger(failure.status) || failure.status < 100 || failure.status > 599)) {
        fail('llm/retry failure.status must be an integer from 100 through 599 when present');
      }
      if (failure.providerRetryAfterMs !== undefined && (!Number.isFinite(failure.providerRetryAfterMs) || failure.providerRetryAfterMs <= 0)) {
        fail('llm/retry failure.providerRetryAfterMs must be a positive finite number when present');
      }
      if (failure.requestId !== undefined && (typeof failure.requestId !== 'string' || failure.requestId.length === 0)) {
        fail('llm/retry failure.requestId must be a non-empty string when present');
      }
      if (!Number.isSafeInteger(retry) || (retry as number) < 1) fail('llm/retry retry must be a positive safe integer');
      if (typeof provider !== 'string' || provider.length === 0) fail('llm/retry provider must be a non-empty string');
      if (typeof policyKey !== 'string' || policyKey.length === 0) fail('llm/retry policyKey must be a non-empty string');
      switch (mode) {
        case 'normal': {
          const maxRetries = d['maxRetries'];
          if (!Number.isSafeInteger(maxRetries) || (maxRetries as number) < 1 || (retry as number) > (maxRetries as number)) {
            fail(`llm/retry retry ${retry} must not exceed a positive safe maxRetries ${maxRetries}`);
          }
          break;
        }
        case 'always':
          if ('maxRetries' in d) fail('llm/retry always mode must omit maxRetries');
          break;
        default:
          fail(`llm/retry mode must be normal or always, got ${String(mode)}`);
      }
      if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_TIMER_DELAY_MS) {
        fail(`llm/retry delayMs must be a finite number within 0..${MAX_TIMER_DELAY_MS}`);
      }
      const turnBoundary = findLast(events, index, (e) => e.type === 'turn/start' || e.type === 'turn/end');
      if (turnBoundary?.type !== 'turn/start') fail('llm/retry must be appended inside an open turn');
      const turnData = turnBoundary!.data as unknown as RetryReads;
      if (turn !== turnData.turn) fail(`llm/retry names turn ${turn}, but the open turn is ${turnData.turn}`);
      const stepBoundary = findLast(events, index, (e) => e.type === 'step/start' || e.type === 'step/end');
      if (stepBoundary?.type !== 'step/start') fail('llm/retry must be appended inside an open step');
      const stepData = stepBoundary!.data as unknown as RetryReads;
      if (step !== stepData.step || turn !== stepData.turn) {
        fail(`llm/retry names turn ${turn}/step ${step}, but the open step is ${stepKey(stepData.turn, stepData.step)}`);
      }
      const routed = providerForOpenStep(events, index, turn, step);
      if (routed !== provider) fail(`llm/retry provider ${provider} does not match the failed request provider ${String(routed)}`);
      const chain = primitiveKey([turn, step, provider, policyKey]);
      const prior = chain === undefined ? undefined : back.lastOfChain.get(chain);
      const priorData = prior?.data as unknown as RetryReads | undefined;
      const expected = (priorData?.retry ?? 0) + 1;
      if (retry !== expected) fail(`llm/retry retry ${retry} must equal provider policy retry ${expected}`);
      if (prior !== undefined && priorData!.retryId !== retryId) fail('llm/retry must preserve retryId across one provider-policy chain');
      if (prior === undefined && back.usedIds.has(retryId as string)) {
        fail(`llm/retry retryId ${toJson(retryId)} is already owned by another chain`);
      }
    } else if (event.type === 'llm/retry-started') {
      const { retryId, turn, step, retry } = rec(event.data);
      if (typeof retryId !== 'string' || retryId.length === 0) fail('llm/retry-started retryId must be a non-empty string');
      const attempt = primitiveKey([retryId, retry]);
      const scheduled = attempt === undefined ? undefined : back.scheduled.get(attempt);
      if (scheduled === undefined) fail('llm/retry-started pairs no prior scheduled attempt');
      if ((scheduled!.data as unknown as RetryReads).turn !== turn || (scheduled!.data as unknown as RetryReads).step !== step) fail('llm/retry-started turn/step must match its scheduled attempt');
      if (back.started.has(attempt!)) {
        fail('llm/retry-started repeats one scheduled attempt');
      }
    }
  });
}

// ---------------------------------------------------------------- F3 (dispatch header)

/**
 * Every loop dispatch (the first `assistant/chunk` of an attempt, §7.5) needs a
 * `request/header` earlier in the log, or its request cannot be reconstructed.
 * Reports the first such dispatch, with the count.
 */
export function dispatchHeaderObserver(): ReplayObserver {
  let sawHeader = false;
  const attempts = new AttemptBoundaries();
  let first: number | undefined;
  let count = 0;
  return {
    observe(e) {
      // Once a header is seen no later dispatch lacks one: nothing more to look at.
      if (sawHeader) return;
      if (e.type === 'request/header') sawHeader = true;
      if (attempts.observe(e)?.starts && !sawHeader) {
        first ??= e.seq;
        count += 1;
      }
    },
    findings() {
      if (first === undefined) return [];
      return [
        {
          code: 'DSH-F3',
          seq: first,
          message: `model dispatch at seq ${first} (first assistant/chunk of an attempt) has no request/header before it${count > 1 ? ` (${count} such dispatches)` : ''}`,
        },
      ];
    },
  };
}

export function dispatchHeader(events: readonly SessionEvent[]): RelationalFinding[] {
  const o = dispatchHeaderObserver();
  for (const e of events) o.observe(e);
  return o.findings();
}

// ---------------------------------------------------------------- F5 (compaction tool pairing, dsh's own)

/**
 * DSH-F5: a surface replacement whose span holds one half of a tool call/result
 * pair while the other half survives on the new surface. Streams with memory
 * bounded by the surface (call ids per current node). Reports the first such
 * replacement, with the count. The relational rules run on accepted logs only,
 * whose surface the restore rules checked: the fold here keeps the surface
 * trusted (`SurfaceFold`), and stops only where a replace range is not on it.
 */
export function compactionToolPairingObserver(): ReplayObserver {
  const fold = new SurfaceFold(false, true);
  const info = new Map<number, ToolPairs>();
  let broken = false;
  let first: RelationalFinding | undefined;
  let count = 0;
  return {
    observe(e) {
      if (broken) return;
      if (e instanceof RowChunk) {
        // A packed row's lean member (most events of a long log) is never a surface event.
        try {
          fold.applyRowChunk(e);
        } catch {
          broken = true;
        }
        return;
      }
      // Most events carry no surface op (chunks): the type is looked up only for those that do.
      const surface = e.surfaceOp !== undefined && isSurfaceEligibleType(e.type);
      const replace = surface && e.surfaceOp !== 'append' ? (e.surfaceOp as { start: number; end: number }) : undefined;
      let rep;
      try {
        rep = fold.apply(e);
      } catch {
        broken = true;
        return;
      }
      if (!surface) return;
      const mine = toolPairsOf(e);
      if (!replace || !rep) {
        info.set(e.seq, mine);
        return;
      }
      const removed = rep.shadowedSeqs.filter((seq) => info.has(seq)).map((seq) => [seq, info.get(seq)!] as const);
      for (const seq of rep.shadowedSeqs) info.delete(seq);
      info.set(e.seq, mine);
      const parts = splitPairs(
        removed,
        fold.nodes.filter((seq) => info.has(seq)).map((seq) => [seq, info.get(seq)!] as const),
      ).map((x) =>
        x.kind === 'call'
          ? `tool call ${toJson(x.callId)} (seq ${x.survivingSeq}) without its result (shadowed seq ${x.shadowedSeq})`
          : `the result of ${toJson(x.callId)} (seq ${x.survivingSeq}) without its call (shadowed seq ${x.shadowedSeq})`,
      );
      if (parts.length === 0) return;
      count += 1;
      first ??= { code: 'DSH-F5', seq: e.seq, message: `surface replacement at seq ${e.seq} (${e.type} over ${replace.start}..${replace.end}) leaves ${parts.join('; ')} on the surface` };
    },
    findings() {
      if (!first) return [];
      return [{ ...first, message: first.message + (count > 1 ? ` (${count} such replacements)` : '') }];
    },
  };
}

export function compactionToolPairing(events: readonly SessionEvent[]): RelationalFinding[] {
  const o = compactionToolPairingObserver();
  for (const e of events) o.observe(e);
  return o.findings();
}

/** Every type the compaction, orphan-lock and retry replays read (plus replacement user/messages: compaction checkpoints). */
const LOOK_BACK_TYPES: ReadonlySet<string> = new Set([
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'session/end-seed',
  'request/header',
  'compaction/start',
  'compaction/summary',
  'compaction/end',
  'compaction/prune',
  'llm/retry',
  'llm/retry-started',
]);

/** Strings longer than this are cut in the events kept for the look-back replays (they compare ids, never payloads). */
const KEEP_STRING = 256;

function slim(value: unknown): unknown {
  return mapJsonLeaves(value, (v) => (typeof v === 'string' && v.length > KEEP_STRING ? v.slice(0, KEEP_STRING) : v));
}

/**
 * An event as the look-back replays keep it. Of a request/header they read only its provider
 * (`retryInvariant`, for an open step's retries), so that is all that is kept of its header, whose
 * tools and system prompt are most of a session's headers (one per dispatch on a long log).
 */
function keptEvent(event: SessionEvent): SessionEvent {
  const config = event.type === 'request/header' ? read(read(event.data, 'header'), 'config') : undefined;
  if (config === null || typeof config !== 'object') return slim(event) as SessionEvent;
  return slim({ ...event, data: { header: { config: { provider: (config as { provider?: unknown }).provider } } } }) as SessionEvent;
}

/**
 * All relational replays over a stream of logical events, in bounded memory:
 * the core and dispatch replays run as the events pass; the compaction, retry
 * and orphan-lock replays (which look back or ahead) run at the end over the
 * only event types they read, with long payload strings cut — they never
 * compare payload text.
 */
export class RelationalStream {
  private session = sessionInvariantObserver();
  private dispatch = dispatchHeaderObserver();
  private pairing = compactionToolPairingObserver();
  private kept: SessionEvent[] = [];

  observe(event: SessionEvent): void {
    this.session.observe(event);
    this.dispatch.observe(event);
    this.pairing.observe(event);
    const type = event.type;
    // Most events are chunks, which no look-back replay reads.
    if (type === 'assistant/chunk') return;
    if (LOOK_BACK_TYPES.has(type) || (type === 'user/message' && event.surfaceOp !== undefined && event.surfaceOp !== 'append')) {
      this.kept.push(keptEvent(event));
    }
  }

  findings(): RelationalFinding[] {
    const kept = this.kept;
    return [...this.session.findings(), ...compactionInvariant(kept), ...orphanCompactionLock(kept), ...retryInvariant(kept), ...this.dispatch.findings(), ...this.pairing.findings()];
  }
}

export function relationalFindings(events: readonly SessionEvent[]): RelationalFinding[] {
  const stream = new RelationalStream();
  for (const e of events) stream.observe(e);
  return stream.findings();
}
