/**
 * Tool call/result pairing on the model surface, the one implementation the
 * compaction audit (`dsh compactions`) and `dsh check` (DSH-F5) share: which
 * tool-call ids a surface node opens and which call a tool/result closes, and
 * which pairs a replacement splits (one half shadowed, the other surviving).
 */
import { read } from '../log/payloads.js';
import type { BlockView, SessionEvent } from '../log/types.js';

/*
 * The one reader of tool calls and results in the log's payloads. A message
 * event reaches a view only after DSH's message-shape check passed (format
 * spec §5 B5): its content is an array; a tool/result's holds exactly one
 * tool-result block whose `toolCallId` equals the message's tool source
 * `callId`, a non-empty string. Nothing else (a block's id or name, a
 * tool/call's fields) is checked, so those are read as `unknown`.
 */

/** A tool-call block an assistant message holds: its id (a string) and the block as logged. */
export interface RequestedCall {
  id: string;
  block: NonNullable<BlockView>;
}

/** The tool-call blocks with a string id of a message's content, in order (none when the content is not an array). */
export function requestedCalls(content: unknown): RequestedCall[] {
  if (!Array.isArray(content)) return [];
  const out: RequestedCall[] = [];
  for (const b of content as BlockView[]) if (b?.type === 'tool-call' && typeof b.id === 'string') out.push({ id: b.id, block: b });
  return out;
}

/** The tool-call blocks of an assistant/message (its `message.content`). */
export function assistantCalls(e: SessionEvent): RequestedCall[] {
  return requestedCalls(read(read(e.data, 'message'), 'content'));
}

/** The call id a tool/result answers, as its message's tool source names it (`message.source.callId`). */
export function resultCallId(e: SessionEvent): unknown {
  return read(read(read(e.data, 'message'), 'source'), 'callId');
}

/** A tool/result's tool-result block (its message's first content block; undefined when the content is not an array). */
export function resultBlock(e: SessionEvent): BlockView {
  const content = read(read(e.data, 'message'), 'content');
  return Array.isArray(content) ? (content[0] as BlockView) : undefined;
}

/** The call id a tool/call records (`data.callId`), as logged. */
export function toolCallId(e: SessionEvent): unknown {
  return read(e.data, 'callId');
}

/** The tool-call ids an assistant/message opens, or the call id a tool/result answers. */
export interface ToolPairs {
  calls: string[];
  result: string | null;
}

const NONE: ToolPairs = { calls: [], result: null };

export function toolPairsOf(e: SessionEvent | undefined): ToolPairs {
  if (!e) return NONE;
  if (e.type === 'assistant/message') return { calls: assistantCalls(e).map((c) => c.id), result: null };
  if (e.type === 'tool/result') {
    const block = read(resultBlock(e), 'toolCallId');
    const source = resultCallId(e);
    return { calls: [], result: typeof block === 'string' ? block : typeof source === 'string' ? source : null };
  }
  return NONE;
}

/** One half of a pair left on the surface after its other half was shadowed. */
export interface SplitPair {
  /** `call`: a surviving tool call lost its result; `result`: a surviving result lost its call. */
  kind: 'call' | 'result';
  callId: string;
  survivingSeq: number;
  shadowedSeq: number;
}

/**
 * Pairs a replacement splits: `shadowed` are the nodes it removed, `surface` the nodes after it
 * (in surface order). A half counts as orphaned only when no surviving node holds its partner.
 */
export function splitPairs(shadowed: Iterable<readonly [number, ToolPairs]>, surface: Iterable<readonly [number, ToolPairs]>): SplitPair[] {
  const callsGone = new Map<string, number>();
  const resultsGone = new Map<string, number>();
  const gone = new Set<number>();
  for (const [seq, p] of shadowed) {
    gone.add(seq);
    for (const id of p.calls) callsGone.set(id, seq);
    if (p.result !== null) resultsGone.set(p.result, seq);
  }
  const kept = [...surface].filter(([seq]) => !gone.has(seq));
  const callsNow = new Set<string>();
  const resultsNow = new Set<string>();
  for (const [, p] of kept) {
    for (const id of p.calls) callsNow.add(id);
    if (p.result !== null) resultsNow.add(p.result);
  }
  const out: SplitPair[] = [];
  for (const [seq, p] of kept) {
    for (const id of p.calls) {
      const s = resultsGone.get(id);
      if (s !== undefined && !resultsNow.has(id)) out.push({ kind: 'call', callId: id, survivingSeq: seq, shadowedSeq: s });
    }
    if (p.result !== null) {
      const s = callsGone.get(p.result);
      if (s !== undefined && !callsNow.has(p.result)) out.push({ kind: 'result', callId: p.result, survivingSeq: seq, shadowedSeq: s });
    }
  }
  return out;
}
