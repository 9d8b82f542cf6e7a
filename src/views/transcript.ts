/**
 * The human transcript (format.md §6.5): append-origin surface events in log
 * order — what the user saw — with compaction and prune markers for the
 * replacements (which restate history for the model only), tool calls paired
 * with their results, and interrupted / synthetic events flagged.
 */
import type { SessionEvent, SessionHeader } from '../log/types.js';
import { isAppendSurfaceEvent, isReplacementSurfaceEvent } from '../log/surface.js';
import { blocksText, foldSurfaceAt, type LoadedSession } from './messages.js';
import { toJson } from '../core/json.js';

export interface TranscriptToolResult {
  seq: number;
  text: string;
  isError: boolean;
  /** `data.error` code/name when the harness recorded one (e.g. TOOL_OUTCOME_UNKNOWN). */
  errorCode: string | null;
  synthetic: boolean;
  /** Seq of a later prune that replaced this result's content for the model, if any. */
  prunedBy: number | null;
}

export interface TranscriptToolCall {
  id: string;
  name: string;
  arguments: string;
  /** Seq of the `tool/call` event (the harness started it), if logged. */
  callSeq: number | null;
  result: TranscriptToolResult | null;
}

export type TranscriptEntry =
  | { kind: 'turn'; seq: number; time: number; turn: number }
  | {
      kind: 'message';
      seq: number;
      time: number;
      role: 'user' | 'assistant';
      id: string | null;
      /** `source.kind` (user, plugin, model, session-reference, …) and plugin name when present. */
      source: string;
      text: string;
      reasoning: string | null;
      toolCalls: TranscriptToolCall[];
      interrupted: boolean;
      /** Empty-content assistant message: no visible content (usage only). */
      empty: boolean;
      synthetic: boolean;
      /** Seq of the replacement that shadowed it for the model, if any. */
      shadowedBy: number | null;
    }
  | { kind: 'tool-result'; seq: number; time: number; callId: string; result: TranscriptToolResult }
  | {
      kind: 'compaction';
      seq: number;
      time: number;
      compactionId: string | null;
      summarySeq: number | null;
      summary: string;
      shadowedSeqs: number[];
      synthetic: boolean;
    }
  | { kind: 'prune'; seq: number; time: number; originalSeq: number; callId: string | null; text: string; synthetic: boolean }
  | { kind: 'replacement'; seq: number; time: number; type: string; shadowedSeqs: number[]; text: string; synthetic: boolean }
  | { kind: 'turn-end'; seq: number; time: number; turn: number; reason: string; detail: string | null; synthetic: boolean };

export interface Transcript {
  sessionId: string;
  header: SessionHeader;
  storedEventCount: number;
  eventCount: number;
  entries: TranscriptEntry[];
}

function isCompactSource(src: any): boolean {
  return src && typeof src === 'object' && src.kind === 'plugin' && src.plugin === 'compact';
}

function sourceLabel(src: any): string {
  if (!src || typeof src !== 'object') return 'unknown';
  if (src.kind === 'plugin') return `plugin:${String(src.plugin)}`;
  return String(src.kind);
}

function reasonDetail(reason: any): string | null {
  if (!reason || typeof reason !== 'object') return null;
  if (reason.kind === 'aborted' && reason.reason) return `${reason.reason.kind}${reason.reason.reason ? `: ${reason.reason.reason}` : ''}`;
  if (reason.kind === 'error' && reason.error) return `${reason.error.code ?? ''}${reason.error.message ? `: ${reason.error.message}` : ''}`;
  return null;
}

function toolResultOf(e: SessionEvent, synthetic: boolean): TranscriptToolResult {
  const block = Array.isArray(e.data?.message?.content) ? e.data.message.content[0] : undefined;
  const err = e.data?.error;
  return {
    seq: e.seq,
    text: blocksText(block?.content ?? e.data?.message?.content),
    isError: Boolean(block?.isError),
    errorCode: err ? String(err.code ?? err.name ?? 'error') : null,
    synthetic,
    prunedBy: null,
  };
}

/** Build the human transcript from a loaded session. */
export function buildTranscript(session: LoadedSession): Transcript {
  const { events, storedEventCount } = session;
  const fold = session.surface ?? foldSurfaceAt(events);
  const shadowedBy = new Map<number, number>();
  const replacedSeqs = new Map<number, number[]>();
  for (const r of fold.replacements) {
    replacedSeqs.set(r.seq, r.shadowedSeqs);
    for (const s of r.shadowedSeqs) shadowedBy.set(s, r.seq);
  }
  const entries: TranscriptEntry[] = [];
  /** Open tool calls by id (the latest assistant message declaring it wins). */
  const calls = new Map<string, TranscriptToolCall>();
  const resultsBySeq = new Map<number, TranscriptToolResult>();

  for (const e of events) {
    const synthetic = e.seq >= storedEventCount;
    const d = e.data ?? {};
    switch (e.type) {
      case 'turn/start':
        entries.push({ kind: 'turn', seq: e.seq, time: e.time, turn: d.turn });
        continue;
      case 'turn/end': {
        const kind = String(d.reason?.kind ?? 'unknown');
        if (kind !== 'completed' || synthetic) {
          entries.push({ kind: 'turn-end', seq: e.seq, time: e.time, turn: d.turn, reason: kind, detail: reasonDetail(d.reason), synthetic });
        }
        continue;
      }
      case 'tool/call': {
        const call = calls.get(String(d.callId));
        if (call) call.callSeq = e.seq;
        continue;
      }
    }
    if (isAppendSurfaceEvent(e)) {
      if (e.type === 'tool/result') {
        const result = toolResultOf(e, synthetic);
        resultsBySeq.set(e.seq, result);
        const callId = String(d.message?.source?.callId ?? d.message?.content?.[0]?.toolCallId ?? '');
        const call = calls.get(callId);
        if (call && call.result === null) call.result = result;
        else entries.push({ kind: 'tool-result', seq: e.seq, time: e.time, callId, result });
        continue;
      }
      const message = e.type === 'user/message' ? d : d.message;
      const content = Array.isArray(message?.content) ? message.content : [];
      const toolCalls: TranscriptToolCall[] = [];
      const reasoning: string[] = [];
      for (const block of content) {
        if (block?.type === 'tool-call') {
          const call: TranscriptToolCall = {
            id: String(block.id),
            name: String(block.name),
            arguments: typeof block.arguments === 'string' ? block.arguments : toJson(block.arguments),
            callSeq: null,
            result: null,
          };
          toolCalls.push(call);
          calls.set(call.id, call);
        } else if (block?.type === 'reasoning') reasoning.push(String(block.text ?? ''));
      }
      entries.push({
        kind: 'message',
        seq: e.seq,
        time: e.time,
        role: e.type === 'user/message' ? 'user' : 'assistant',
        id: typeof message?.id === 'string' ? message.id : null,
        source: sourceLabel(message?.source),
        text: blocksText(content.filter((b: any) => b?.type !== 'tool-call' && b?.type !== 'reasoning')),
        reasoning: reasoning.length > 0 ? reasoning.join('\n') : null,
        toolCalls,
        interrupted: e.type === 'assistant/message' && d.interrupted === true,
        empty: content.length === 0,
        synthetic,
        shadowedBy: shadowedBy.get(e.seq) ?? null,
      });
      continue;
    }
    if (isReplacementSurfaceEvent(e)) {
      const shadowed = replacedSeqs.get(e.seq) ?? [];
      if (e.type === 'user/message' && isCompactSource(d.source)) {
        const sources = Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs : [];
        const summaryEvent = sources.map((s) => events[s]).find((x) => x?.type === 'compaction/summary');
        entries.push({
          kind: 'compaction',
          seq: e.seq,
          time: e.time,
          compactionId: d.source.compactionId !== undefined ? String(d.source.compactionId) : null,
          summarySeq: summaryEvent ? summaryEvent.seq : null,
          summary: summaryEvent ? blocksText(summaryEvent.data?.summary) : blocksText(d.content),
          shadowedSeqs: [...shadowed],
          synthetic,
        });
      } else if (e.type === 'tool/result') {
        const original = shadowed[0] ?? -1;
        const prior = resultsBySeq.get(original);
        if (prior) prior.prunedBy = e.seq;
        const pruned = toolResultOf(e, synthetic);
        resultsBySeq.set(e.seq, pruned);
        entries.push({
          kind: 'prune',
          seq: e.seq,
          time: e.time,
          originalSeq: original,
          callId: d.message?.source?.callId !== undefined ? String(d.message.source.callId) : null,
          text: pruned.text,
          synthetic,
        });
      } else {
        const message = e.type === 'user/message' ? d : d.message;
        entries.push({ kind: 'replacement', seq: e.seq, time: e.time, type: e.type, shadowedSeqs: [...shadowed], text: blocksText(message?.content), synthetic });
      }
    }
  }
  return { sessionId: session.sessionId, header: session.header, storedEventCount, eventCount: events.length, entries };
}
