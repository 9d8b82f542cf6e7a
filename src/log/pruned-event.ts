import type { EventEnvelope, SurfaceOp, UnknownEvent } from './types.js';

/**
 * A stored event a worker thread already parsed and checked (see `facts.ts`):
 * it carries only what the ordered fold on the main thread reads (type, seq,
 * time, surface op and provenance, and in `data` the turn/step numbers and
 * ids the crash-closer tracker reads; a packed row's member, its row's turn
 * and step), never the payload. The stateless
 * checks (envelope, legacy shapes, message shapes, surface shapes) passed on
 * the worker, so the fold runs only its stateful part on it. Consumers that
 * opt in (`InspectOptions.pruned`; for packed rows' members only, `leanRows`)
 * see these in place of parsed events.
 */
export class PrunedEvent implements EventEnvelope<string, UnknownEvent['data']> {
  // Declared, not initialised: a pruned chunk (most events of a log) is an object of four fields,
  // and an event that has none of these lacks them as a parsed one does.
  declare surfaceOp?: SurfaceOp;
  declare sourceEventSeqs?: number[];
  /** The message id of a user/assistant/tool-result event (the normalizer remembers it). */
  declare messageId?: string;
  /** tool/result: its payload with the content taken out, canonical (`contentFreeKey`), for the content-only rewrite rule. */
  declare contentFree?: string;
  constructor(
    readonly type: string,
    readonly seq: number,
    readonly time: number,
    readonly data: UnknownEvent['data'],
  ) {}
}

/**
 * A packed row's chunk member as a read that takes rows lean hands it over (`ReadOptions.leanRows`,
 * or a pruned read): a {@link PrunedEvent} of type `assistant/chunk` whose `data` is its row's
 * `{turn, step}`, one object the row's members share. A consumer can tell it from a parsed chunk by
 * its class: it carries no chunk payload, no citations and no surface op.
 */
export class RowChunk extends PrunedEvent {}
