import type { SessionEvent } from './types.js';

export const TOOL_NOT_STARTED_TEXT = 'The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.';
export const TOOL_OUTCOME_UNKNOWN_TEXT =
  'The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.';

export interface CloserReason {
  seq: number;
  type: string;
  why: string;
}

/** The fields the tracker reads, as DSH's `interruptedTurnClosers` reads them (without a check). */
interface DshReads {
  turn: unknown;
  step: unknown;
  callId: unknown;
  message: { content: Iterable<{ type: unknown; id: unknown }>; source: { callId: unknown } };
}

/**
 * DSH's `interruptedTurnClosers` as a single forward pass: feed every
 * normalized stored event, then ask for the closers. Reads the same fields
 * DSH reads, so malformed data fails the same way (a TypeError).
 */
export class CloserTracker {
  private openTurn: unknown = null;
  private openStep: unknown = null;
  private pending = new Map<unknown, { step: unknown; callSeq?: number }>();
  private last: SessionEvent | undefined;
  openTurnStartSeq: number | undefined;

  observe(event: SessionEvent): void {
    // Read as DSH reads it, unguarded: a malformed payload throws the TypeError DSH's read throws.
    const data = event.data as unknown as DshReads;
    switch (event.type) {
      case 'turn/start':
        this.openTurn = data.turn;
        this.openStep = null;
        this.pending.clear();
        this.openTurnStartSeq = event.seq;
        break;
      case 'turn/end':
        this.openTurn = null;
        this.openStep = null;
        this.pending.clear();
        break;
      case 'step/start':
        this.openStep = data.step;
        break;
      case 'step/end':
        this.pending.clear();
        this.openStep = null;
        break;
      case 'assistant/message':
        for (const block of data.message.content) {
          if (block.type === 'tool-call') {
            // Map#set on an existing key keeps its position and replaces the entry.
            this.pending.set(block.id, { step: data.step });
          }
        }
        break;
      case 'tool/call': {
        const entry = this.pending.get(data.callId);
        if (entry) entry.callSeq = event.seq;
        break;
      }
      case 'tool/result':
        this.pending.delete(data.message.source.callId);
        break;
      default:
        break;
    }
    this.last = event;
  }

  closers(): { closers: SessionEvent[]; reasons: CloserReason[] } {
    const last = this.last;
    if (this.openTurn === null || last === undefined) return { closers: [], reasons: [] };
    let seq = last.seq + 1;
    const time = last.time;
    const closers: SessionEvent[] = [];
    const reasons: CloserReason[] = [];
    for (const [callId, { step, callSeq }] of this.pending) {
      const started = callSeq !== undefined;
      const message = {
        id: `interrupted-tool-result-${callId}-${seq}`,
        role: 'user',
        source: { kind: 'tool', callId },
        content: [
          {
            type: 'tool-result',
            toolCallId: callId,
            isError: true,
            content: [{ type: 'text', text: started ? TOOL_OUTCOME_UNKNOWN_TEXT : TOOL_NOT_STARTED_TEXT }],
          },
        ],
      };
      const event: SessionEvent = {
        type: 'tool/result',
        seq,
        time,
        data: {
          turn: this.openTurn,
          step,
          message,
          error: started
            ? { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' }
            : { name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' },
        },
        surfaceOp: 'append',
        ...(started ? { sourceEventSeqs: [callSeq as number] } : {}),
      };
      closers.push(event);
      reasons.push({
        seq,
        type: 'tool/result',
        why: started
          ? `tool call ${String(callId)} was recorded as started (tool/call seq ${callSeq}) but has no result: outcome unknown`
          : `tool call ${String(callId)} was requested by the assistant but never recorded as started`,
      });
      seq += 1;
    }
    if (this.openStep !== null) {
      closers.push({ type: 'step/end', seq, time, data: { turn: this.openTurn, step: this.openStep } });
      reasons.push({ seq, type: 'step/end', why: `step ${String(this.openStep)} of turn ${String(this.openTurn)} was still open` });
      seq += 1;
    }
    closers.push({ type: 'turn/end', seq, time, data: { turn: this.openTurn, reason: { kind: 'interrupted' } } });
    reasons.push({ seq, type: 'turn/end', why: `turn ${String(this.openTurn)} was still open when the log ended` });
    return { closers, reasons };
  }
}
