/**
 * Every logical event of a validated log, delivered in order: held in one pass
 * for small logs, two passes (validate, then stream) for large ones. Shared by
 * the streaming commands and the dataset writer.
 */
import { inspectTarget, type SessionInspection } from './session.js';
import type { ResolvedTarget } from './target.js';
import { heldBytesBudget, replayLogical, type InspectOptions } from './inspect.js';
import { UsageError } from './errors.js';
import type { SessionEvent } from './types.js';
import { expandedChunkJson } from './rows.js';
import { toJson } from '../core/json.js';

/** Logs up to this many bytes on disk are read once with events held in memory. */
export const SINGLE_PASS_BYTES = 48 << 20;

/** Where delivered output waits: flushed between decoded chunks (the CLI's buffered stdout). */
export interface Flushable {
  readonly pending: number;
  flush(): Promise<void>;
  maybeFlush(): Promise<void>;
}

/**
 * The JSON text of a logical event: its stored line when that line is the
 * event byte for byte; else serialized. With no line text, a chunk can only
 * come from a packed row (migrations never touch chunks, closers are never
 * chunks), so it takes the fast row serializer.
 */
export function logicalEventJson(e: SessionEvent, text: string | undefined): string {
  if (text !== undefined && !text.endsWith('\r')) return text;
  return text === undefined && e.type === 'assistant/chunk' ? expandedChunkJson(e) : toJson(e);
}

/** Receives one logical event, its stored JSONL line (undefined for a synthetic closer), and whether it is a closer. */
export type Emit = (event: SessionEvent, text: string | undefined, synthetic: boolean) => void;

/**
 * Deliver every logical event (closers last) to `emit`, only once the whole
 * log is known to be valid (DSH accepts or refuses a log as a whole): small
 * logs in one pass holding the events, large logs in two passes (validate,
 * then stream) in memory bounded by the surface, not the log.
 */
export async function forEachLogicalEvent(
  target: ResolvedTarget,
  options: InspectOptions,
  ready: (validated: SessionInspection) => Emit,
  out?: Flushable,
): Promise<SessionInspection> {
  const size = (() => {
    try {
      const s = target.open();
      const n = s.size;
      s.close();
      return n;
    } catch {
      return 0;
    }
  })();
  if (size <= SINGLE_PASS_BYTES) {
    const held: [SessionEvent, string | undefined][] = [];
    const budget = heldBytesBudget();
    let heldBytes = 0;
    let r: SessionInspection | undefined;
    try {
      r = await inspectTarget(target, {
        ...options,
        collect: false,
        skipArtifact: true,
        onLogical: (e, text) => {
          held.push([e, text]);
          heldBytes += text !== undefined ? text.length : 256;
          // A small file can still expand to more than memory holds: fall back to two passes.
          if (heldBytes > budget) throw new TooBigForOnePass('switch to two passes');
        },
      });
    } catch (error) {
      if (!(error instanceof TooBigForOnePass)) throw error;
      held.length = 0;
    }
    if (r) return emitHeld(r, held, ready, out);
  }
  return twoPasses(target, options, ready, out);
}

class TooBigForOnePass extends UsageError {}

async function emitHeld(r: SessionInspection, held: [SessionEvent, string | undefined][], ready: (validated: SessionInspection) => Emit, out?: Flushable): Promise<SessionInspection> {
  {
    if (r.error) return r;
    const emit = ready(r);
    for (const [e, text] of held) {
      emit(e, text, false);
      if (out && out.pending >= 1 << 20) await out.flush();
    }
    for (const c of r.closers) emit(c, undefined, true);
    return r;
  }
}

async function twoPasses(target: ResolvedTarget, options: InspectOptions, ready: (validated: SessionInspection) => Emit, out?: Flushable): Promise<SessionInspection> {
  const first = await inspectTarget(target, { ...options, collect: false, skipArtifact: true });
  if (first.error) return first;
  const emit = ready(first);
  // The verdict is in: the second pass only decodes and normalizes.
  const source = target.open();
  let second;
  try {
    second = await replayLogical(source, {
      rawPath: target.rawPath,
      ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      ...(options.decoder ? { decoder: options.decoder } : {}),
      ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
      onLogical: (e, text) => emit(e, text, false),
      ...(out ? { between: () => out.maybeFlush() } : {}),
    });
  } finally {
    source.close();
  }
  if (second.error || second.storedEventCount !== first.storedEventCount) {
    return { ...first, error: { name: 'Error', class: 'Error', message: `${target.path} changed while it was being read`, kind: 'io', stage: 'physical' } };
  }
  for (const c of first.closers) emit(c, undefined, true);
  return first;
}

