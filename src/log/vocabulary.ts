/** DSH's `KNOWN_SESSION_EVENT_TYPES` at dsh-v0.1.1-rc.2 (48 types), as a list (the `SessionEvent` union has one member per name). */
export const KNOWN_EVENT_TYPE_NAMES = [
  'agent-preset/selected',
  'agent/inbox/spliced',
  'approval/asked',
  'approval/decided',
  'approval/policy',
  'assistant/chunk',
  'assistant/message',
  'command/done',
  'command/run',
  'compaction/end',
  'compaction/prune',
  'compaction/start',
  'compaction/summary',
  'feedback/record',
  'goal/change',
  'hook/invoked',
  'hook/result',
  'llm/retry',
  'llm/retry-started',
  'permission/preset',
  'plan/mode',
  'request/context',
  'request/header',
  'sandbox/mode',
  'schedule/change',
  'session/end-seed',
  'session/title',
  'session/title-llm-request',
  'step/end',
  'step/start',
  'subagent/descriptor',
  'team/member',
  'team/message/delivered',
  'team/message/queued',
  'team/task',
  'todo/write',
  'tool-workflow/agent-end',
  'tool-workflow/agent-start',
  'tool-workflow/run-end',
  'tool-workflow/run-start',
  'tool/call',
  'tool/code-dispatch',
  'tool/code-dispatch-start',
  'tool/result',
  'turn/end',
  'turn/start',
  'user/message',
  'web/deepseek-search-llm-request',
] as const;

export type KnownEventType = (typeof KNOWN_EVENT_TYPE_NAMES)[number];

export const KNOWN_EVENT_TYPES: ReadonlySet<string> = new Set(KNOWN_EVENT_TYPE_NAMES);

export function unknownTypeRefusalText(id: string, type: string, seq: number): string {
  return `session "${id}" contains event type "${type}" (seq ${seq}) unknown to this harness and not marked ignorable; refusing to interpret the log — it was likely written by a newer harness`;
}
