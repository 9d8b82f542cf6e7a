import { LogError, refused, RuleError, wrapCorruption } from './errors.js';
import { assertMessageEventShape, LegacyNormalizer, LegacyRejections } from './legacy.js';
import { KNOWN_EVENT_TYPES, unknownTypeRefusalText } from './vocabulary.js';
import { CloserTracker, type CloserReason } from './closers.js';
import { RestoreValidator, validateRestoredHeader, headerRecord } from './restore.js';
import type { SessionEvent, SessionHeader } from './types.js';
import type { DeferredRewrite, Replacement } from './surface.js';

export interface LogicalResult {
  /** The normalized stored events (collected only when asked). */
  storedEvents?: SessionEvent[];
  storedEventCount: number;
  closers: SessionEvent[];
  closerReasons: CloserReason[];
  /** Count of events legacy normalization rewrote. */
  migratedEvents: number;
  /** Unknown-but-ignorable events kept in the log. */
  ignorableUnknown: number[];
  error?: LogError;
  /** The DSH stage that failed, for `check` rule codes. */
  failedStage?: 'legacy' | 'migration' | 'vocabulary' | 'closers' | 'restore-header' | 'restore';
  surface?: { nodes: number[]; replaceGeneration: number; replacements: Replacement[] };
}

/** The validating state after an accepted prefix, to continue from (a grown log). */
export interface PipelineResume {
  eventCount: number;
  /** A tracker already fed the prefix's open last turn (a fresh one when every turn ended). */
  closers: CloserTracker;
  /** `toolResults` may hold `UNREAD_PAYLOAD`s: their rewrites are then appended to `deferred` (see `SurfaceFold.restore`). */
  surface: {
    nodes: readonly number[];
    replaceGeneration: number;
    replacements: readonly Replacement[];
    toolResults: ReadonlyMap<number, unknown>;
    deferred?: DeferredRewrite[];
  };
}

export interface LogicalOptions {
  collect?: boolean;
  /** Called with each normalized stored event (before closers). */
  /** Called with each normalized stored event (and the stored event it came from). */
  onEvent?: (event: SessionEvent, stored: SessionEvent) => void;
  keepReplacements?: boolean;
}

/**
 * DSH's coordinator stage 2 (legacy rejection, normalization, shape checks,
 * unknown-type refusal, crash closers, restore validation) as one streaming
 * pass. Each stage keeps its first error; `finish` reports the one DSH would
 * have thrown first, with DSH's wrapping.
 */
export class LogicalPipeline {
  private rejections = new LegacyRejections();
  private normalizer: LegacyNormalizer;
  private closers = new CloserTracker();
  private restore: RestoreValidator;
  private migrationError: { message: string; seq: number; rule: RuleError['rule'] } | undefined;
  private unknown: SessionEvent | undefined;
  private closerError: Error | undefined;
  private count = 0;
  private collected: SessionEvent[] | undefined;
  private ignorable: number[] = [];

  constructor(private readonly meta: SessionHeader, private readonly rawPath: string, private readonly options: LogicalOptions = {}) {
    this.normalizer = new LegacyNormalizer(meta.id);
    this.restore = new RestoreValidator(options.keepReplacements ?? true);
    if (options.collect) this.collected = [];
  }

  /**
   * Continue after an accepted prefix. Only the stages that carry state across events need it:
   * an accepted prefix left no rejection, migration, unknown type or closer error behind, and a
   * prefix with migrated events is never resumed (the normalizer's message ids are not kept).
   */
  resumeFrom(state: PipelineResume): void {
    this.count = state.eventCount;
    this.closers = state.closers;
    this.restore.resumeAt(state.eventCount, (fold) => fold.restore({ ...state.surface, count: state.eventCount }));
  }

  /** Seqs of the surface's current tool/result nodes from stored events (not closers), after `finish`. */
  storedToolResultSeqs(): number[] {
    return this.restore.fold.toolResultSeqs.filter((s) => s < this.count);
  }

  observe(stored: SessionEvent): void {
    this.count += 1;
    this.rejections.observe(stored);
    if (this.migrationError) return;
    let event: SessionEvent;
    try {
      event = this.normalizer.normalize(stored);
    } catch (error) {
      // Every migration check names its rule (B2-B5); a throw without one is DSH's message-shape failure.
      this.migrationError = { message: (error as Error).message, seq: stored.seq, rule: error instanceof RuleError ? error.rule : 'DSH-B5' };
      return;
    }
    if (!KNOWN_EVENT_TYPES.has(event.type)) {
      if (isIgnorableUnknown(event)) this.ignorable.push(event.seq);
      else this.unknown ??= event;
    }
    this.collected?.push(event);
    this.options.onEvent?.(event, stored);
    if (!this.closerError) {
      try {
        this.closers.observe(event);
      } catch (error) {
        this.closerError = error as Error;
      }
    }
    this.restore.observe(event);
  }

  finish(): LogicalResult {
    const id = this.meta.id;
    const base: LogicalResult = {
      storedEventCount: this.count,
      closers: [],
      closerReasons: [],
      migratedEvents: this.normalizer.migrated,
      ignorableUnknown: this.ignorable,
      ...(this.collected ? { storedEvents: this.collected } : {}),
    };
    const fail = (error: LogError, stage: LogicalResult['failedStage']): LogicalResult => ({ ...base, error, failedStage: stage });
    const rejection = this.rejections.first(id);
    if (rejection) return fail(wrapCorruption(id, new LogError(rejection[0], { seq: rejection[1], rule: 'DSH-B1', dshClass: rejection[2] })), 'legacy');
    if (this.migrationError) {
      return fail(wrapCorruption(id, new LogError(this.migrationError.message, { seq: this.migrationError.seq, rule: this.migrationError.rule })), 'migration');
    }
    if (this.unknown) {
      const u = this.unknown;
      return fail(
        refused(`${unknownTypeRefusalText(id, String(u.type), u.seq)} (raw log: ${this.rawPath})`, { kind: 'jsonl', path: this.rawPath }, u.seq, 'DSH-B6'),
        'vocabulary',
      );
    }
    if (this.closerError) {
      const inner = new LogError(this.closerError.message, { dshClass: this.closerError.name === 'TypeError' ? 'TypeError' : 'Error', rule: 'DSH-R2' });
      return fail(wrapCorruption(id, inner), 'closers');
    }
    const { closers, reasons } = this.closers.closers();
    // DSH adopts each closer (its message-shape check, worded for a session event) before the restore sees it.
    for (const closer of closers) {
      try {
        assertMessageEventShape(closer as unknown as Record<string, unknown>, `session event at seq ${closer.seq}`, 'DSH-R2');
      } catch (error) {
        return fail(wrapCorruption(id, new LogError((error as Error).message, { seq: closer.seq, rule: 'DSH-R2' })), 'closers');
      }
    }
    try {
      validateRestoredHeader(id, headerRecord(this.meta));
    } catch (error) {
      return fail(wrapCorruption(id, new LogError((error as Error).message, { rule: 'DSH-C1' })), 'restore-header');
    }
    for (const closer of closers) this.restore.observe(closer);
    const failure = this.restore.failure;
    if (failure) {
      return fail(
        wrapCorruption(id, new LogError(failure.message, { ...(failure.seq !== undefined ? { seq: failure.seq } : {}), rule: failure.rule })),
        'restore',
      );
    }
    const fold = this.restore.fold;
    return {
      ...base,
      closers,
      closerReasons: reasons,
      surface: { nodes: fold.nodes, replaceGeneration: fold.replaceGeneration, replacements: fold.replacements },
    };
  }
}

/** An event of a type DSH does not know that it keeps uninterpreted (`ignorable: true`); any other unknown type refuses the log. */
export function isIgnorableUnknown(event: SessionEvent): boolean {
  return !KNOWN_EVENT_TYPES.has(event.type) && event.ignorable === true;
}
