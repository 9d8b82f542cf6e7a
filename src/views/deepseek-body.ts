/**
 * The DeepSeek chat-completions request body a reconstructed dispatch maps
 * to, following the facts of DSH's DeepSeek adapter (`dsh-llm-deepseek`
 * `serializeRequest`, text-only path) and the `dsh-llm` service boundary
 * (`projectImagesForTextModel`) at dsh-v0.1.1-rc.2:
 *
 * - body keys, in order: `model, messages, stream: true, stream_options
 *   {include_usage: true}, thinking?, reasoning_effort?, tools?, temperature?,
 *   max_tokens?, stop?` (absent options are omitted, never null);
 * - `header.system` becomes a leading `{role:'system'}` message;
 * - a `system` message → `{role:'system', content: text blocks joined}`;
 * - an assistant message → `{role:'assistant', content: text blocks joined
 *   ("" when none, never null), reasoning_content? (reasoning blocks joined,
 *   only when non-empty), tool_calls? [{id, type:'function', function:{name,
 *   arguments}}]}`;
 * - a user message → `{role:'user', content: text blocks joined}` when that
 *   text is non-empty or it has no tool results, then one `{role:'tool',
 *   tool_call_id, content: text of the result ("(no output)" when empty)}` per
 *   `tool-result` block;
 * - tools → `{type:'function', function:{name, description, parameters}}`;
 * - `config.reasoningEffort` `off` → `thinking {type:'disabled'}`; `low|high|max`
 *   → `thinking {type:'enabled'}, reasoning_effort`; absent → the adapter's
 *   configured defaults (unknown offline: omitted here, noted).
 */
import type { EpochHeader } from './header.js';
import { toJson } from '../core/json.js';
import type { BlockView } from '../log/types.js';

/** The chat-completions request body DSH would send to the DeepSeek API for one dispatch. */
export interface DeepSeekBody {
  model: string;
  messages: Record<string, unknown>[];
  stream: true;
  stream_options: { include_usage: true };
  thinking?: { type: 'enabled' | 'disabled' };
  reasoning_effort?: 'low' | 'high' | 'max';
  tools?: { type: 'function'; function: { name: string; description: string; parameters: unknown } }[];
  temperature?: number;
  max_tokens?: number;
  stop?: string[];
}

export interface DeepSeekBodyResult {
  body: DeepSeekBody;
  /** Where the body may differ from the bytes DSH actually sent. */
  notes: string[];
}

/** A dispatch whose DeepSeek request body cannot be rebuilt (`dsh request --body deepseek`). */
export class BodyError extends Error {}

/** What the body cannot reproduce, whatever the log says (README material). */
export const DEEPSEEK_BODY_LIMITS: readonly string[] = [
  'Text-only path only: image blocks are rendered as DSH\'s text-only placeholder ("[image omitted because this model accepts text only; attachment sha256:…]"). For an image-capable catalogued model DSH uploads the bytes (file ids) or inlines base64 from the attachment store; neither is in the log.',
  'When the header config has no reasoningEffort, thinking/reasoning_effort come from the adapter\'s connection defaults (DSH config, not logged) and are omitted here.',
  'HTTP headers (authorization, x-deepseek-harness-session-id, user id) and the endpoint URL are not part of the body and are not logged.',
  'llm/stream middleware installed by plugins could rewrite a request after dispatch; the log cannot show that.',
  'The body is JSON-equivalent (same keys in the adapter\'s order, same values), not a byte copy of what was sent.',
];

function joinBlocks(blocks: unknown, type: string): string {
  if (!Array.isArray(blocks)) return '';
  const texts = blocks.filter((b) => b && typeof b === 'object' && (b as { type?: unknown }).type === type).map((b) => String((b as { text?: unknown }).text ?? ''));
  // One block's text is the text itself (joining would copy a huge one).
  return texts.length === 1 ? (texts[0] as string) : texts.join('');
}

function imageText(block: BlockView): string {
  const id = String(block?.attachment?.attachmentId ?? '');
  return `[image omitted because this model accepts text only; attachment sha256:${id.slice('sha256:'.length, 'sha256:'.length + 8)}]`;
}

/** `projectImagesForTextModel`: image blocks (also nested in tool results) become text placeholders. */
function projectImages(blocks: unknown, counter: { images: number }): BlockView[] {
  if (!Array.isArray(blocks)) return [];
  return (blocks as BlockView[]).map((b): BlockView => {
    if (b?.type === 'image') {
      counter.images += 1;
      return { type: 'text', text: imageText(b) };
    }
    if (b?.type === 'tool-result') return { ...b, content: projectImages(b.content, counter) };
    return b;
  });
}

/** DSH `serializeMessages` (text-only path). */
export function serializeMessages(messages: readonly unknown[], notes: string[] = []): Record<string, unknown>[] {
  const wire: Record<string, unknown>[] = [];
  const counter = { images: 0 };
  const unknownBlocks = new Set<string>();
  for (const raw of messages) {
    const message = raw as { role?: unknown; content?: unknown };
    const content = projectImages(message.content, counter);
    for (const b of content) {
      const t = String(b?.type);
      if (!['text', 'reasoning', 'tool-call', 'tool-result'].includes(t)) unknownBlocks.add(t);
    }
    if (message.role === 'system') {
      wire.push({ role: 'system', content: joinBlocks(content, 'text') });
      continue;
    }
    if (message.role === 'assistant') {
      const text = joinBlocks(content, 'text');
      const reasoning = joinBlocks(content, 'reasoning');
      const toolCalls = content
        .filter((b) => b?.type === 'tool-call')
        .map((b) => ({ id: b!.id, type: 'function', function: { name: b!.name, arguments: b!.arguments } }));
      wire.push({
        role: 'assistant',
        content: text,
        ...(reasoning.length > 0 ? { reasoning_content: reasoning } : {}),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      });
      continue;
    }
    if (message.role !== 'user') notes.push(`a message with role ${toJson(message.role)} is sent as a user message (DSH's adapter treats every non-system, non-assistant role so)`);
    const toolResults = content.filter((b) => b?.type === 'tool-result') as NonNullable<BlockView>[];
    const text = joinBlocks(content, 'text');
    if (text.length > 0 || toolResults.length === 0) wire.push({ role: 'user', content: text });
    for (const result of toolResults) {
      wire.push({ role: 'tool', tool_call_id: result.toolCallId, content: joinBlocks(result.content, 'text') || '(no output)' });
    }
  }
  if (counter.images > 0) {
    notes.push(`${counter.images} image block(s) rendered as DSH's text-only placeholder; an image-capable model would receive uploaded file ids or base64 bytes from the attachment store instead (not in the log)`);
  }
  if (unknownBlocks.size > 0) notes.push(`content block type(s) ${[...unknownBlocks].join(', ')} have no DeepSeek wire form and are dropped (as DSH's adapter does)`);
  return wire;
}

/**
 * Build the body for a dispatch from its reconstructed header and messages.
 * Throws BodyError when the header is missing (no model to address).
 */
export function deepseekBody(header: EpochHeader | null | undefined, messages: readonly unknown[]): DeepSeekBodyResult {
  if (!header) throw new BodyError('no request/header precedes this dispatch, so its model, system prompt and tools are unknown; a DeepSeek body cannot be built');
  const notes: string[] = [];
  const config = header.config ?? ({} as EpochHeader['config']);
  if (typeof config.provider === 'string' && !/deepseek/i.test(config.provider)) {
    notes.push(`the dispatch went to provider ${toJson(config.provider)}, not DSH's DeepSeek adapter ("deepseek-official"); this is what the DeepSeek adapter would have sent`);
  }
  const wire: Record<string, unknown>[] = [];
  if (header.system !== undefined) {
    if (typeof header.system !== 'string') notes.push('header.system is not a string (recorded snapshot placeholder?); sent as is');
    wire.push({ role: 'system', content: header.system });
  }
  wire.push(...serializeMessages(messages, notes));
  let thinking: DeepSeekBody['thinking'];
  let effort: DeepSeekBody['reasoning_effort'];
  const re = config.reasoningEffort;
  if (re === 'off') thinking = { type: 'disabled' };
  else if (re === 'low' || re === 'high' || re === 'max') {
    thinking = { type: 'enabled' };
    effort = re;
  } else if (re === undefined) {
    notes.push('the header has no reasoningEffort: DSH would apply the adapter\'s configured thinking defaults (not logged); thinking/reasoning_effort omitted');
  } else {
    notes.push(`reasoningEffort ${toJson(re)} is not a DeepSeek effort: DSH's adapter would fail this call with UNSUPPORTED_REASONING_EFFORT before sending`);
  }
  let tools: DeepSeekBody['tools'];
  if (Array.isArray(header.tools)) {
    tools = header.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
  } else if (header.tools !== undefined) {
    notes.push('header.tools is not an array (recorded snapshot placeholder?); tools omitted');
  }
  const body: DeepSeekBody = {
    model: config.model,
    messages: wire,
    stream: true,
    stream_options: { include_usage: true },
    ...(thinking !== undefined ? { thinking } : {}),
    ...(effort !== undefined ? { reasoning_effort: effort } : {}),
    ...(tools !== undefined && tools.length > 0 ? { tools } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.maxTokens === undefined ? {} : { max_tokens: config.maxTokens }),
    ...(config.stop !== undefined ? { stop: config.stop } : {}),
  };
  return { body, notes };
}

/** Shape check used by tests and `--body` self-checks: every tool message answers an earlier assistant tool_call. */
export function checkToolPairing(body: DeepSeekBody): string[] {
  const problems: string[] = [];
  const open = new Set<string>();
  for (const [i, m] of body.messages.entries()) {
    if (m['role'] === 'assistant' && Array.isArray(m['tool_calls'])) for (const c of m['tool_calls'] as { id?: unknown }[]) open.add(String(c.id));
    if (m['role'] === 'tool') {
      const id = String(m['tool_call_id']);
      if (!open.has(id)) problems.push(`messages[${i}] tool_call_id ${toJson(id)} answers no earlier assistant tool_call`);
    }
  }
  return problems;
}
