import { isAbsolute } from 'node:path';
import { assertCurrentLlmShape } from './legacy.js';
import { SurfaceFold, SurfaceError } from './surface.js';
import { RuleError, type RuleCode } from '../core/errors.js';
import type { SessionEvent, SessionHeader } from './types.js';
import { PrunedEvent } from './pruned-event.js';
import { RowChunkEvent } from './rows.js';

/** DSH's restore-time header validation (`validateSessionHeader`), C1. */
export function validateRestoredHeader(id: string, record: Record<string, unknown>): void {
  if (record['version'] !== 0) throw new Error(`session header version must be 0, got ${String(record['version'])}`);
  if (record['id'] !== id) throw new Error(`session header id "${String(record['id'])}" does not match session id "${id}"`);
  const createdAt = record['createdAt'];
  if (typeof createdAt !== 'number' || !Number.isSafeInteger(createdAt) || createdAt < 0) {
    throw new Error('session header createdAt must be a non-negative safe integer');
  }
  if (record['cwd'] !== undefined) {
    if (typeof record['cwd'] !== 'string') throw new Error('session header cwd must be a string');
    if (!isAbsolute(record['cwd'])) throw new Error(`session header cwd must be an absolute path, got "${record['cwd']}"`);
  }
  if (record['parentSession'] !== undefined && typeof record['parentSession'] !== 'string') {
    throw new Error('session header parentSession must be a string');
  }
  const seedLength = record['seedLength'];
  if (seedLength !== undefined && (typeof seedLength !== 'number' || !Number.isSafeInteger(seedLength) || seedLength < 0)) {
    throw new Error('session header seedLength must be a non-negative safe integer');
  }
  if (record['origin'] !== undefined && record['origin'] !== 'subagent') throw new Error('session header origin must be "subagent"');
  const depth = record['delegationDepth'];
  if (depth !== undefined && (typeof depth !== 'number' || !Number.isSafeInteger(depth) || depth < 0)) {
    throw new Error('session header delegationDepth must be a non-negative safe integer');
  }
  if (record['agentPreset'] !== undefined && typeof record['agentPreset'] !== 'string') {
    throw new Error('session header agentPreset must be a string');
  }
}

const ENVELOPE_KEYS = new Set(['type', 'seq', 'time', 'data', 'surfaceOp', 'sourceEventSeqs', 'ignorable']);

/** Envelope check (C2) including the LLM-shape checks DSH runs inside it. */
export function assertEnvelope(event: Record<string, unknown>, index: number): void {
  if (event['type'] === 'request/header-delta') {
    throw new RuleError(`seed event at index ${index} uses unsupported legacy request/header-delta format`, 'DSH-C2');
  }
  for (const key in event) {
    if (!ENVELOPE_KEYS.has(key)) throw new RuleError(`seed event at index ${index} has an invalid event envelope`, 'DSH-C2');
  }
  const { type, seq, time } = event;
  if (
    typeof type !== 'string' ||
    typeof seq !== 'number' ||
    !Number.isSafeInteger(seq) ||
    seq < 0 ||
    typeof time !== 'number' ||
    !Number.isSafeInteger(time) ||
    event['data'] === undefined ||
    (event['ignorable'] !== undefined && event['ignorable'] !== true)
  ) {
    throw new RuleError(`seed event at index ${index} has an invalid event envelope`, 'DSH-C2');
  }
  // DSH re-checks message shapes here (C5); the coordinator already ran the same
  // checks on the same events (B5, an earlier stage whose error wins), so in a
  // full load only the request/header shape (C3) can fail at this point.
  assertCurrentLlmShape(event, index);
}

/** Envelope (C2, C3, C5) and the legacy fallback reason (C4): the restore checks that read the event alone. */
export function statelessRestoreChecks(record: Record<string, unknown>, index: number): void {
  assertEnvelope(record, index);
  const data = record['data'];
  if (record['type'] === 'request/header' && data !== null && typeof data === 'object' && !Array.isArray(data) && (data as { reason?: unknown }).reason === 'fallback') {
    throw new RuleError(`seed event at index ${index} uses unsupported legacy request/header reason "fallback"`, 'DSH-C4');
  }
}

export interface RestoreFailure {
  message: string;
  seq?: number;
  rule: RuleCode;
}

/**
 * `Session.fromRestore` validation as a streaming checker: per event
 * envelope → legacy fallback reason → contiguity → surface acceptance.
 * The fold is exposed for views that need the final surface.
 */
export class RestoreValidator {
  readonly fold: SurfaceFold;
  private index = 0;
  failure: RestoreFailure | undefined;

  constructor(keepReplacements = true) {
    this.fold = new SurfaceFold(keepReplacements);
  }

  /** Continue after an accepted prefix of `count` events whose fold `restore` gives back. */
  resumeAt(count: number, restore: (fold: SurfaceFold) => void): void {
    this.index = count;
    restore(this.fold);
  }

  observe(event: SessionEvent): void {
    if (this.failure) return;
    const index = this.index++;
    const record = event as unknown as Record<string, unknown>;
    try {
      // A pruned event passed the stateless checks (envelope, C3-C5) on a worker; a packed row's
      // member has the envelope its row's checks guarantee (and no C3-C5 shape to check).
      if (!(event instanceof PrunedEvent) && !(event instanceof RowChunkEvent)) statelessRestoreChecks(record, index);
      if (event.seq !== index) {
        throw new RuleError(`seed event at index ${index} has seq ${event.seq} (expected ${index}); seed must be contiguous from 0`, 'DSH-C6');
      }
    } catch (error) {
      this.failure = { message: (error as Error).message, seq: typeof event.seq === 'number' ? event.seq : index, rule: error instanceof RuleError ? error.rule : 'DSH-C7' };
      return;
    }
    try {
      this.fold.apply(event);
    } catch (error) {
      const e = error as Error;
      this.failure = {
        message: `invalid seed event at index ${index}: ${e.message}`,
        seq: event.seq,
        rule: error instanceof SurfaceError ? error.rule : 'DSH-C7',
      };
    }
  }
}

export function headerRecord(meta: SessionHeader): Record<string, unknown> {
  return meta as unknown as Record<string, unknown>;
}
