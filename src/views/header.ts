/**
 * Request-header reconstruction (format.md §7.1-7.2): canonical form,
 * equality, and the last-wins fold over `request/header` events.
 */
import type { EpochHeaderView, SessionEvent, View } from '../log/types.js';
import { toJson } from '../core/json.js';

import type { EpochHeader, LlmCallConfig, ToolSchema } from '../log/payloads.js';

export type { EpochHeader, LlmCallConfig, ToolSchema } from '../log/payloads.js';

function hasLength(v: unknown): boolean {
  // DSH tests `x !== undefined && x.length > 0`; a string or array behaves the same.
  return v !== undefined && v !== null && typeof (v as { length?: unknown }).length === 'number' && (v as { length: number }).length > 0;
}

/**
 * `canonicalHeader`: `{config}` + `adapterDefaults` (whole object) only when a
 * flag is `true` + non-empty `system` + non-empty `tools`. Other keys dropped.
 */
export function canonicalHeader(header: unknown): EpochHeader {
  const h = (header ?? {}) as NonNullable<EpochHeaderView> & { adapterDefaults?: View<{ reasoningEffort: unknown; maxTokens: unknown }> };
  const adapterDefaults = h['adapterDefaults'];
  const out: Record<string, unknown> = { config: h['config'] };
  if (adapterDefaults?.reasoningEffort === true || adapterDefaults?.maxTokens === true) out['adapterDefaults'] = adapterDefaults;
  if (hasLength(h['system'])) out['system'] = h['system'];
  if (hasLength(h['tools'])) out['tools'] = h['tools'];
  return out as unknown as EpochHeader;
}

/** `callConfigEquals` from `dsh-llm`. */
export function callConfigEquals(a: LlmCallConfig, b: LlmCallConfig): boolean {
  if (
    a?.provider !== b?.provider ||
    a?.model !== b?.model ||
    a?.reasoningEffort !== b?.reasoningEffort ||
    a?.temperature !== b?.temperature ||
    a?.maxTokens !== b?.maxTokens
  ) {
    return false;
  }
  if (a?.stop === undefined || b?.stop === undefined) return a?.stop === b?.stop;
  return a.stop.length === b.stop.length && a.stop.every((s, i) => s === b.stop?.[i]);
}

/** `headerEquals` over canonical headers: config, adapter flags, system, tools in order by JSON text. */
export function headerEquals(a: EpochHeader, b: EpochHeader): boolean {
  if (
    !callConfigEquals(a.config, b.config) ||
    a.adapterDefaults?.reasoningEffort !== b.adapterDefaults?.reasoningEffort ||
    a.adapterDefaults?.maxTokens !== b.adapterDefaults?.maxTokens ||
    a.system !== b.system
  ) {
    return false;
  }
  const at = (a.tools ?? []) as unknown[];
  const bt = (b.tools ?? []) as unknown[];
  return at.length === bt.length && at.every((tool, i) => toJson(tool) === toJson(bt[i]));
}

/** `foldRequestHeader(events, from?)`: the last `request/header` canonicalized, or `from`/undefined. */
export function foldRequestHeader(events: Iterable<SessionEvent>, from?: EpochHeader): EpochHeader | undefined {
  let state = from;
  for (const event of events) {
    if (event.type === 'request/header') state = canonicalHeader(event.data?.header);
  }
  return state;
}

export interface HeaderChange {
  field: string;
  before: unknown;
  after: unknown;
}

/** Field-level differences between two canonical headers (for `--diff` and `--list`). */
export function headerChanges(a: EpochHeader | null | undefined, b: EpochHeader | null | undefined): HeaderChange[] {
  if (!a && !b) return [];
  if (!a || !b) return [{ field: 'header', before: a ?? null, after: b ?? null }];
  const out: HeaderChange[] = [];
  const keys = new Set([...Object.keys(a.config ?? {}), ...Object.keys(b.config ?? {})]);
  for (const k of keys) {
    const x = (a.config as Record<string, unknown> | undefined)?.[k];
    const y = (b.config as Record<string, unknown> | undefined)?.[k];
    if (toJson(x) !== toJson(y)) out.push({ field: `config.${k}`, before: x, after: y });
  }
  for (const flag of ['reasoningEffort', 'maxTokens'] as const) {
    const x = a.adapterDefaults?.[flag];
    const y = b.adapterDefaults?.[flag];
    if (x !== y) out.push({ field: `adapterDefaults.${flag}`, before: x, after: y });
  }
  if (a.system !== b.system) out.push({ field: 'system', before: a.system, after: b.system });
  const at = Array.isArray(a.tools) ? a.tools : a.tools === undefined ? [] : a.tools;
  const bt = Array.isArray(b.tools) ? b.tools : b.tools === undefined ? [] : b.tools;
  if (!Array.isArray(at) || !Array.isArray(bt)) {
    if (toJson(at) !== toJson(bt)) out.push({ field: 'tools', before: a.tools, after: b.tools });
    return out;
  }
  const byName = (list: ToolSchema[]) => new Map(list.map((t) => [String(t?.name), toJson(t)]));
  const am = byName(at);
  const bm = byName(bt);
  for (const [name, text] of bm) {
    if (!am.has(name)) out.push({ field: `tools[${name}]`, before: undefined, after: 'added' });
    else if (am.get(name) !== text) out.push({ field: `tools[${name}]`, before: 'schema', after: 'changed' });
  }
  for (const name of am.keys()) if (!bm.has(name)) out.push({ field: `tools[${name}]`, before: 'present', after: 'removed' });
  if (out.every((c) => !c.field.startsWith('tools')) && !headerEquals({ config: a.config, tools: at } as EpochHeader, { config: a.config, tools: bt } as EpochHeader)) {
    out.push({ field: 'tools', before: 'order', after: 'reordered' });
  }
  return out;
}
