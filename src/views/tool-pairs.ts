/**
 * Tool call/result pairing on the model surface, the one implementation the
 * compaction audit (`dsh compactions`) and `dsh check` (DSH-F5) share: which
 * tool-call ids a surface node opens and which call a tool/result closes, and
 * which pairs a replacement splits (one half shadowed, the other surviving).
 */
import type { SessionEvent } from '../log/types.js';

/** The tool-call ids an assistant/message opens, or the call id a tool/result answers. */
export interface ToolPairs {
  calls: string[];
  result: string | null;
}

const NONE: ToolPairs = { calls: [], result: null };

function rec(v: unknown): Record<string, any> {
  return v !== null && typeof v === 'object' ? (v as Record<string, any>) : {};
}

export function toolPairsOf(e: SessionEvent | undefined): ToolPairs {
  if (!e) return NONE;
  const message = rec(rec(e.data)['message']);
  if (e.type === 'assistant/message') {
    const content = message['content'];
    return { calls: Array.isArray(content) ? content.filter((b: any) => b?.type === 'tool-call' && typeof b.id === 'string').map((b: any) => b.id as string) : [], result: null };
  }
  if (e.type === 'tool/result') {
    const block = Array.isArray(message['content']) ? rec(message['content'][0]) : {};
    const id = typeof block['toolCallId'] === 'string' ? block['toolCallId'] : typeof rec(message['source'])['callId'] === 'string' ? (rec(message['source'])['callId'] as string) : null;
    return { calls: [], result: id };
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
