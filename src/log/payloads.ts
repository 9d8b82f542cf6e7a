/**
 * Typed payloads (`data`) of the event types dsh's views read, after the
 * format spec (§4.3-§4.5, §9.1). DSH's vocabulary is merge-extensible, so
 * every shape is open (unknown fields and kinds are tolerated). These are the
 * shapes DSH writes; a log read is typed by the views of `PayloadViews`
 * (`./types.ts`), and an event narrowed with `isEventOf(event, 'tool/call')`.
 */
import type { KnownEvent, SessionEvent } from './types.js';
import type { KnownEventType } from './vocabulary.js';

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'image'; attachment: { attachmentId: string; mediaType: string; bytes: number; width: number; height: number; name?: string } }
  | { type: 'tool-call'; id: string; name: string; arguments: string }
  | { type: 'tool-result'; toolCallId: string; content: ContentBlock[]; isError?: boolean }
  | { type: string; [field: string]: unknown };

export type MessageSource = { kind: string; [field: string]: unknown };

export interface Message {
  id: string;
  role: 'system' | 'user' | 'assistant';
  content: ContentBlock[];
  source: MessageSource;
}

/** DSH's disjoint token counts: billed input = inputTokens + cacheReadTokens + cacheWriteTokens. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

export interface LlmFailure {
  message: string;
  code: string;
  status?: number;
  providerRetryAfterMs?: number;
  requestId?: string;
}

export type FinishReason = 'stop' | 'tool-calls' | 'max-tokens' | { kind: 'aborted' | 'error'; failure: LlmFailure } | { kind: string; [field: string]: unknown };

export type StreamChunk =
  | { type: 'block-start'; index: number; blockType: string }
  | { type: 'text-delta' | 'reasoning-delta'; index: number; text: string }
  | { type: 'tool-call-delta'; index: number; id: string; name?: string; argumentsDelta: string }
  | { type: 'block-end'; index: number; block: ContentBlock }
  | { type: 'usage'; usage: TokenUsage }
  | { type: 'finish'; reason: FinishReason; replayState?: unknown };

export type TurnEndReason =
  | { kind: 'completed' | 'blocked' | 'max-tokens' | 'interrupted' }
  | { kind: 'aborted'; reason: { kind: string; reason?: string } }
  | { kind: 'error'; error: LlmFailure }
  | { kind: string; [field: string]: unknown };

/** DSH `LlmCallConfig` (merge-extensible: unknown keys are kept as stored). */
export interface LlmCallConfig {
  provider: string;
  model: string;
  reasoningEffort?: string;
  temperature?: number;
  maxTokens?: number;
  stop?: string[];
  [key: string]: unknown;
}

export interface ToolSchema {
  name: string;
  description: string;
  parameters: unknown;
}

/** DSH `EpochHeader` (`tools` can be a placeholder string in recorded snapshot fixtures). */
export interface EpochHeader {
  config: LlmCallConfig;
  adapterDefaults?: { reasoningEffort?: true; maxTokens?: true; [key: string]: unknown };
  system?: string;
  tools?: ToolSchema[];
}

export interface ShadowedRange {
  start: number;
  end: number;
}

/** `data` by event type as DSH writes it, for the types dsh's views read. */
export interface EventPayloads {
  'turn/start': { turn: number; trigger?: unknown };
  'turn/end': { turn: number; reason: TurnEndReason };
  'step/start': { turn: number; step: number };
  'step/end': { turn: number; step: number };
  'user/message': Message & { role: 'user' };
  'assistant/chunk': { turn: number; step: number; chunk: StreamChunk };
  'assistant/message': { turn: number; step: number; message: Message & { role: 'assistant' }; usage?: TokenUsage; interrupted?: true };
  'tool/call': { turn: number; step: number; callId: string; name: string; arguments: string };
  'tool/result': { turn: number; step: number; message: Message & { role: 'user' }; error?: { name: string; code: string }; meta?: unknown };
  'todo/write': { todos: { content: string; status: 'pending' | 'in_progress' | 'completed' }[] };
  'request/header': { header: EpochHeader; reason: 'initial' | 'resume' | 'change' };
  'request/context': { provider: string; model: string; contextWindow?: number };
  'session/end-seed': Record<string, never>;
  'session/title': { title: string; messageSeqs: number[]; source: { kind: string; [field: string]: unknown } };
  'llm/retry': { retryId: string; turn: number; step: number; provider: string; mode: string; retry: number; maxRetries?: number; delayMs: number; failure: LlmFailure };
  'compaction/start': { compactionId: string; sourceCommandId?: string; turn: number | null };
  'compaction/summary': {
    compactionId: string;
    sourceCommandId?: string;
    summary: ContentBlock[];
    rawOutput?: string;
    llmStreamCall?: true;
    shadowedRange: ShadowedRange;
    shadowedSeqs: number[];
    shadowedTokenCount: number;
    provider: string;
    model: string;
    maxTokens?: number;
    usage?: TokenUsage;
  };
  'compaction/end': { compactionId: string; sourceCommandId?: string; turn: number | null; error?: string };
  'compaction/prune': { shadowedRange: ShadowedRange; shadowedSeqs: number[]; shadowedTokenCount: number };
}

/** A logical event of a type DSH knows, its `data` viewed by the keys DSH writes (`PayloadViews`). */
export type TypedEvent<T extends KnownEventType> = KnownEvent<T>;

/** Narrow an event by its type (`e.type === t` alone cannot rule out the unknown-type member). */
export function isEventOf<T extends KnownEventType>(event: SessionEvent, type: T): event is KnownEvent<T> {
  return event.type === type;
}

/** `v?.[key]`, for a value of unchecked shape (the same read: undefined for null or undefined, else the property). */
export function read(v: unknown, key: string): unknown {
  return v === null || v === undefined ? undefined : (v as Record<string, unknown>)[key];
}
