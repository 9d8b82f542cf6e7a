import type { KnownEventType } from './vocabulary.js';

/** The on-disk header (DSH `SessionHeader` as stored, only known fields). */
export interface SessionHeader {
  version: number;
  id: string;
  createdAt: number;
  cwd?: string;
  parentSession?: string;
  seedLength?: number;
  origin?: 'subagent';
  delegationDepth: number;
  agentPreset?: string;
}

export type SurfaceOp = 'append' | { op: 'replace'; start: number; end: number };

/**
 * A logged JSON value of a shape nothing validated, read by property: a read of
 * a named key gives that key's value when the value is an object that has it,
 * and undefined otherwise (for any other JSON value, a string or a number, an
 * array); `null` and a missing value are kept apart since reading them throws.
 * Any key reads as `unknown`; the named keys are those DSH writes, typed as
 * `unknown` or as a view again (for a nested object DSH writes), since DSH's
 * vocabulary is merge-extensible and a hostile log can put anything there.
 */
export type View<Keys> = ({ readonly [K in keyof Keys]?: Keys[K] } & { readonly [key: string]: unknown }) | null | undefined;

/** The keys of a `{kind, ...}` union DSH writes (turn-end reasons, message sources, finish reasons). */
export type KindView = View<{ kind: unknown; reason: unknown; error: unknown; failure: unknown; provider: unknown; model: unknown; callId: unknown; plugin: unknown; compactionId: unknown; sourceCommandId: unknown }>;
export type UsageView = View<{ inputTokens: unknown; outputTokens: unknown; cacheReadTokens: unknown; cacheWriteTokens: unknown; reasoningTokens: unknown }>;
/** An image block's attachment reference (the bytes are in the attachment store, not the log). */
export type AttachmentView = View<{ attachmentId: unknown; mediaType: unknown; bytes: unknown; width: unknown; height: unknown; name: unknown }>;
/**
 * A content block (`{type:'text'|'reasoning'|'image'|'tool-call'|'tool-result', ...}`): the one
 * definition every reader of message content uses (a tool-result's `content` holds blocks again).
 */
export type BlockView = View<{ type: unknown; text: unknown; attachment: AttachmentView; id: unknown; name: unknown; arguments: unknown; toolCallId: unknown; content: unknown; isError: unknown }>;
/** A `Message` (`user/message`'s `data`, `message` of assistant/message and tool/result). */
export type MessageView = View<{ id: unknown; role: unknown; content: unknown; source: KindView }>;
export type StreamChunkView = View<{ type: unknown; index: unknown; blockType: unknown; text: unknown; id: unknown; name: unknown; argumentsDelta: unknown; block: BlockView; usage: UsageView; reason: unknown; replayState: unknown }>;
export type ConfigView = View<{ provider: unknown; model: unknown; reasoningEffort: unknown; temperature: unknown; maxTokens: unknown; stop: unknown }>;
export type EpochHeaderView = View<{ config: ConfigView; adapterDefaults: unknown; system: unknown; tools: unknown; messagePrefix: unknown }>;
export type RangeView = View<{ start: unknown; end: unknown }>;

/**
 * What reading a nested key of any payload gives, whatever the event's type:
 * each is a view (safe to read for any value), so an event's payload can be
 * read by these keys before its type is narrowed (`e.data?.message?.content`).
 */
export interface CommonPayloadKeys {
  message: MessageView;
  chunk: StreamChunkView;
  usage: UsageView;
  header: EpochHeaderView;
  source: KindView;
  reason: KindView & View<{ reason: KindView; error: KindView }>;
  error: View<{ name: unknown; code: unknown; message: unknown }>;
  shadowedRange: RangeView;
}

/** The `data` of an event: a view by the keys DSH writes for its type and the common nested keys. */
export type Payload<Keys> = View<Keys & CommonPayloadKeys>;

/**
 * `data` by event type: the keys DSH writes (format spec §4.3-§4.5, §9.1), as
 * views. Nothing here is narrowed to what DSH validates: views fold events as
 * they stream, before the log's own checks (B2-B5, C3) have passed or failed,
 * so every read is checked where it is used (`src/log/payloads.ts` has the
 * shapes DSH writes, `src/views/tool-pairs.ts` the one reader of tool calls
 * and results).
 */
export interface PayloadViews {
  'agent-preset/selected': Payload<{ agentPreset: unknown }>;
  'agent/inbox/spliced': Payload<{ target: unknown; start: unknown; removedCount: unknown; inserted: unknown; outcome: unknown }>;
  'approval/asked': Payload<{ id: unknown; toolName: unknown; callId: unknown; reason: unknown }>;
  'approval/decided': Payload<{ id: unknown; outcome: unknown }>;
  'approval/policy': Payload<{ policy: unknown; source: unknown }>;
  'assistant/chunk': Payload<{ turn: unknown; step: unknown; chunk: StreamChunkView }>;
  'assistant/message': Payload<{ turn: unknown; step: unknown; message: MessageView; usage: UsageView; interrupted: unknown }>;
  'command/done': Payload<{ commandId: unknown; kind: unknown; text: unknown; sourceEventSeq: unknown }>;
  'command/run': Payload<{ commandId: unknown; name: unknown; args: unknown; source: KindView }>;
  'compaction/end': Payload<{ compactionId: unknown; sourceCommandId: unknown; turn: unknown; error: unknown }>;
  'compaction/prune': Payload<{ shadowedRange: RangeView; shadowedSeqs: unknown; shadowedTokenCount: unknown }>;
  'compaction/start': Payload<{ compactionId: unknown; sourceCommandId: unknown; turn: unknown }>;
  'compaction/summary': Payload<{
    compactionId: unknown;
    sourceCommandId: unknown;
    summary: unknown;
    rawOutput: unknown;
    llmStreamCall: unknown;
    shadowedRange: RangeView;
    shadowedSeqs: unknown;
    shadowedTokenCount: unknown;
    provider: unknown;
    model: unknown;
    maxTokens: unknown;
    usage: UsageView;
  }>;
  'feedback/record': Payload<{ text: unknown }>;
  'goal/change': Payload<{ kind: unknown; version: unknown; operation: unknown; goal: unknown; roundsStarted: unknown; createdAt: unknown; updatedAt: unknown; cleared: unknown; clearedAt: unknown }>;
  'hook/invoked': Payload<{ turn: unknown; point: unknown; dialect: unknown; matcher: unknown; handlerId: unknown }>;
  'hook/result': Payload<{ turn: unknown; point: unknown; handlerId: unknown; decision: unknown; exitCode: unknown; stderrSummary: unknown; durationMs: unknown }>;
  'llm/retry': Payload<{ retryId: unknown; turn: unknown; step: unknown; provider: unknown; mode: unknown; policyKey: unknown; retry: unknown; maxRetries: unknown; delayMs: unknown; failure: unknown }>;
  'llm/retry-started': Payload<{ retryId: unknown; turn: unknown; step: unknown; retry: unknown }>;
  'permission/preset': Payload<{ preset: unknown }>;
  'plan/mode': Payload<{ active: unknown }>;
  'request/context': Payload<{ provider: unknown; model: unknown; contextWindow: unknown }>;
  'request/header': Payload<{ header: EpochHeaderView; reason: unknown }>;
  'sandbox/mode': Payload<{ mode: unknown; source: unknown }>;
  'schedule/change': Payload<{ version: unknown; operation: unknown; schedule: unknown; id: unknown; acceptedAt: unknown }>;
  'session/end-seed': Payload<Record<never, unknown>>;
  'session/title': Payload<{ title: unknown; messageSeqs: unknown; source: KindView }>;
  'session/title-llm-request': Payload<{ titleProvider: unknown; messageSeqs: unknown; route: unknown; system: unknown; messages: unknown; maxTokens: unknown }>;
  'step/end': Payload<{ turn: unknown; step: unknown }>;
  'step/start': Payload<{ turn: unknown; step: unknown }>;
  'subagent/descriptor': Payload<{ version: unknown; mode: unknown; provider: unknown; label: unknown; agentProvider: unknown; agentModel: unknown; persona: unknown; toolFilter: unknown }>;
  'team/member': Payload<{ version: unknown; teamId: unknown }>;
  'team/message/delivered': Payload<{ version: unknown; teamId: unknown }>;
  'team/message/queued': Payload<{ version: unknown; teamId: unknown }>;
  'team/task': Payload<{ version: unknown; teamId: unknown }>;
  'todo/write': Payload<{ todos: unknown }>;
  'tool-workflow/agent-end': Payload<{ runId: unknown; seq: unknown; outcome: unknown }>;
  'tool-workflow/agent-start': Payload<{ runId: unknown; seq: unknown; label: unknown; phase: unknown; childId: unknown }>;
  'tool-workflow/run-end': Payload<{ runId: unknown; stopReason: unknown }>;
  'tool-workflow/run-start': Payload<{ runId: unknown; name: unknown }>;
  'tool/call': Payload<{ turn: unknown; step: unknown; callId: unknown; name: unknown; arguments: unknown }>;
  'tool/code-dispatch': Payload<{ rootCallId: unknown; parentCallId: unknown; subCallId: unknown; name: unknown; arguments: unknown; isError: unknown; content: unknown }>;
  'tool/code-dispatch-start': Payload<{ rootCallId: unknown; parentCallId: unknown; subCallId: unknown; name: unknown; arguments: unknown }>;
  'tool/result': Payload<{ turn: unknown; step: unknown; message: MessageView; error: View<{ name: unknown; code: unknown }>; meta: unknown }>;
  'turn/end': Payload<{ turn: unknown; reason: KindView }>;
  'turn/start': Payload<{ turn: unknown; trigger: unknown }>;
  'user/message': Payload<{ id: unknown; role: unknown; content: unknown; source: KindView }>;
  'web/deepseek-search-llm-request': Payload<{ endpoint: unknown; apiVersion: unknown; body: unknown }>;
}

/**
 * A message that passed DSH's message-shape check (format spec §5 B5, which
 * the read path runs before a message event reaches a fold): a non-empty
 * string id, a source with a non-empty string kind, a content array; a
 * tool/result's also a tool source with a string callId. Nothing inside the
 * content is checked but a tool/result's one block.
 */
export interface CheckedMessage {
  id: string;
  role: string;
  content: unknown[];
  source: { kind: string; callId?: unknown; [key: string]: unknown };
  [key: string]: unknown;
}

/** The envelope of every event (format spec §3.1). */
export interface EventEnvelope<T extends string, D> {
  type: T;
  seq: number;
  time: number;
  data: D;
  ignorable?: true;
  sourceEventSeqs?: number[];
  surfaceOp?: SurfaceOp;
}

/** An event of a type DSH knows, its `data` viewed by the keys DSH writes for that type. */
export type KnownEvent<T extends KnownEventType = KnownEventType> = T extends KnownEventType ? EventEnvelope<T, PayloadViews[T]> : never;

/**
 * An event of a type DSH does not know (kept when marked `ignorable`, else it
 * refuses the log): `type` is any other string, `data` any JSON value (viewed
 * by any key, so a top-level read like `e.data?.turn` holds for every event).
 */
export type UnknownEvent = EventEnvelope<string, Payload<Record<never, unknown>>>;

/**
 * A SessionEvent as decoded: one member per type DSH knows, and the unknown
 * types as their own member. `e.type === 'tool/call'` cannot rule the unknown
 * member out (its `type` is a string), so narrow with `isEventOf` or read with
 * `payloadOf` (`src/log/payloads.ts`).
 */
export type SessionEvent = KnownEvent | UnknownEvent;

export type Encoding = 'zstd' | 'none';
