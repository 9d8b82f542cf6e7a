/**
 * Attempt boundaries (format §7.5): the one rule for where a model attempt
 * starts and ends, used by every view that counts or rebuilds attempts
 * (`request`, `replay`, `stats`, check's F3).
 *
 * Rule: an attempt is a run of `assistant/chunk` events of one `(turn, step)`.
 * It starts at the first chunk after `step/start`, after the previous
 * attempt's `finish` chunk, or after a chunk of another `(turn, step)`; it ends
 * at its own `finish` chunk, at the next `assistant/message` (DSH appends the
 * message once the attempt's stream is complete), `step/start`, `step/end` or
 * `turn/end`, or at a chunk of another `(turn, step)`. A run without a finish
 * is a cancelled attempt or a crash tail. Steps are compared as
 * `${turn}/${step}` keys (core/keys.ts `stepKey`), so a malformed `turn` of 1 and
 * "1" is one step, as everywhere else.
 *
 * In a log that passes E4/E5 and ends every attempt with a finish, the
 * event ends never fire on their own (a chunk after `step/start` always
 * belongs to a new step); they matter for logs without finish chunks and for
 * malformed logs, e.g. a repeated step, where check's F3 counts dispatches.
 */
import type { SessionEvent } from '../log/types.js';
import { stepKey } from '../core/keys.js';

/** Event types that end any open attempt. */
const ENDING_EVENTS = new Set(['assistant/message', 'step/start', 'step/end', 'turn/end']);

/** Where the current chunk sits in its attempt. */
export interface ChunkPlace {
  /** This chunk opens a new attempt. */
  readonly starts: boolean;
  /** This chunk closes its attempt (a `finish` chunk). */
  readonly ends: boolean;
}

const START_END: ChunkPlace = Object.freeze({ starts: true, ends: true });
const START: ChunkPlace = Object.freeze({ starts: true, ends: false });
const END: ChunkPlace = Object.freeze({ starts: false, ends: true });
const MIDDLE: ChunkPlace = Object.freeze({ starts: false, ends: false });

/**
 * Incremental attempt segmentation: call {@link observe} with every event in
 * seq order. For an `assistant/chunk` it returns where the chunk sits in its
 * attempt; for any other event, null.
 */
export class AttemptBoundaries {
  private open = false;
  private openTurn: unknown;
  private openStep: unknown;
  private openKey: string | undefined;

  observe(event: SessionEvent): ChunkPlace | null {
    if (event.type !== 'assistant/chunk') {
      if (ENDING_EVENTS.has(event.type)) this.open = false;
      return null;
    }
    const d = event.data;
    return this.chunk(d?.turn, d?.step, d?.chunk?.type === 'finish');
  }

  /**
   * {@link observe} of an `assistant/chunk` of `(turn, step)`, a `finish` chunk when `ends` (a
   * packed row's member is never one).
   */
  chunk(turn: unknown, step: unknown, ends: boolean): ChunkPlace {
    let starts = !this.open;
    // Same step: compared as values first (no key string per chunk), as keys otherwise.
    if (!starts && !(this.openTurn === turn && this.openStep === step)) {
      const key = stepKey(turn, step);
      if ((this.openKey ??= stepKey(this.openTurn, this.openStep)) !== key) {
        starts = true;
      }
    }
    if (starts) {
      this.open = true;
      this.openTurn = turn;
      this.openStep = step;
      this.openKey = undefined;
    }
    if (ends) this.open = false;
    return starts ? (ends ? START_END : START) : ends ? END : MIDDLE;
  }

  /** Go on from a prefix that ended inside an attempt of `(turn, step)` (its finish not seen yet). */
  restoreOpen(turn: unknown, step: unknown): void {
    this.open = true;
    this.openTurn = turn;
    this.openStep = step;
    this.openKey = undefined;
  }

  /** Whether an attempt is open (its finish not seen yet). */
  get isOpen(): boolean {
    return this.open;
  }
}
