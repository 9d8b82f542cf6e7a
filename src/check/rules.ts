/**
 * The `dsh check` rule catalogue: stable codes (SARIF ruleIds, `--rules`,
 * `--ignore`), default severities, and the format.md section each rule
 * reproduces. Prose here is dsh's; finding messages carry DSH's exact text
 * wherever DSH has one.
 */

export type Severity = 'error' | 'warning' | 'info';

import type { RuleCode } from '../core/rules.js';

export interface RuleMeta {
  code: RuleCode;
  severity: Severity;
  /** Short name (SARIF `name`, JUnit testcase name). */
  name: string;
  /** One-line description (SARIF `shortDescription`). */
  title: string;
  /** What to do about it. */
  hint: string;
  /** Where the rule comes from (format.md / DSH source). */
  source: string;
}

const r = (code: RuleCode, severity: Severity, name: string, title: string, hint: string, source: string): RuleMeta => ({
  code,
  severity,
  name,
  title,
  hint,
  source,
});

const RESTORE_HINT = 'DSH refuses to load this session (SessionPersistenceCorruptionError); the writer that produced it is broken — keep the file for forensics, do not edit it in place';
const INVARIANT_HINT = 'DSH loads this log (it does not check this), but its opt-in invariant companion would reject it: the log was written by a broken, foreign or test-fixture writer; use --strict to fail on it';

/** `dsh check`'s rule catalogue: every code, its severity, name, what it means and what to do. */
export const RULES: readonly RuleMeta[] = [
  // A. Physical / JSONL
  r('DSH-A1', 'error', 'header-record', 'The header record is missing, not one LF-terminated line, or not JSON', 'the artifact is empty or its first line/frame was damaged; DSH cannot open it', 'format.md §5 A1, §1.5, §2.2'),
  r('DSH-A2', 'error', 'foreign-version', 'The header declares a log format version other than 0 (refused)', 'open it with the harness version that wrote it; DSH refuses (SessionFormatUnsupportedError) rather than guess', 'format.md §5 A2'),
  r('DSH-A3', 'error', 'header-shape', 'The header record does not have the session-header shape, or uses retired fields', 'the header was hand-edited or written by a foreign tool', 'format.md §5 A3, §1.5'),
  r('DSH-A4', 'warning', 'storage-identity', 'The artifact is not where its header id/cwd say DSH would store it', 'DSH would refuse it at this path (requested id / logPath mismatch); move it back or use a separate root', 'format.md §5 A4, §1.4'),
  r('DSH-A5', 'error', 'zstd-structure', 'A zstd frame is structurally invalid (magic, header, block type)', 'bytes other than a torn final frame are damaged; DSH refuses the log', 'format.md §5 A5, §2.2'),
  r('DSH-A6', 'error', 'zstd-frame-checksum', 'A complete zstd frame fails to decompress or its XXH64 checksum does not match', 'the frame at the named byte offset is corrupted on disk; restore from backup', 'format.md §5 A6, §2.2'),
  r('DSH-A7', 'error', 'zstd-torn-record', 'A complete zstd frame ends inside a JSONL record', 'a frame that checksum-validates must hold whole lines; the writer was broken', 'format.md §5 A7'),
  r('DSH-A8', 'error', 'unparsable-line', 'A committed body line does not parse (JSON or packed row) and a later turn/end follows it', 'a defect before durable later work is corruption, not a torn tail; DSH refuses the log', 'format.md §5 A8, A10, §2.4'),
  r('DSH-A9', 'error', 'seq-gap', 'Decoded events are not contiguous (events[i].seq !== i) before a later turn/end', 'events were lost or duplicated in the committed region', 'format.md §5 A9, §2.4'),
  r('DSH-A10', 'warning', 'torn-tail', 'The log ends in a torn tail that DSH recovers by truncation', "DSH's committing load() truncates the tail (and re-appends recovered records); the listed bytes are lost", 'format.md §5 A10, §2.2, §2.4'),
  r('DSH-A11', 'error', 'root-layout', 'The session root holds a layout DSH rejects (flat file, both encodings in one session directory, one id in several project directories)', 'use a separate root or move the artifact into a project/session directory', 'format.md §1.2'),
  // B. Coordinator import
  r('DSH-B1', 'error', 'legacy-rejected', 'The log holds a retired legacy record (request/header-delta, mode/set, fallback header)', RESTORE_HINT, 'format.md §5 B1'),
  r('DSH-B2', 'error', 'malformed-turn-end', 'A turn/end is malformed (pre-react-loop migration rejects it)', RESTORE_HINT, 'format.md §5 B2, §11.7'),
  r('DSH-B3', 'error', 'malformed-turn-start', 'A legacy turn/start with trigger is malformed', RESTORE_HINT, 'format.md §5 B3, §11.7'),
  r('DSH-B4', 'error', 'malformed-steering', 'A legacy steering/message matches neither legacy shape', RESTORE_HINT, 'format.md §5 B4, §11.7'),
  r('DSH-B5', 'error', 'message-shape', 'A message event (user/assistant message, tool/result) has an invalid message shape', RESTORE_HINT, 'format.md §5 B5'),
  r('DSH-B6', 'error', 'unknown-type', 'An event type unknown to this harness is not marked ignorable (refused)', 'the log was likely written by a newer harness; open it with that version', 'format.md §5 B6, §4.1'),
  r('DSH-B7', 'info', 'ignorable-unknown', 'The log holds unknown event types marked ignorable (kept, not interpreted)', 'nothing to do: DSH keeps and skips them', 'format.md §4.1'),
  // C. Restore
  r('DSH-C1', 'error', 'restore-header', 'The header fails restore validation (version, id, createdAt, cwd, seedLength, ...)', RESTORE_HINT, 'format.md §5 C1'),
  r('DSH-C2', 'error', 'restore-envelope', 'An event has an invalid envelope (keys, seq/time types, data, ignorable)', RESTORE_HINT, 'format.md §5 C2, §3.1'),
  r('DSH-C3', 'error', 'request-header-shape', 'A request/header lacks provider/model or has invalid reasoningEffort/adapterDefaults', RESTORE_HINT, 'format.md §5 C3'),
  r('DSH-C4', 'error', 'restore-fallback', 'A request/header uses the retired reason "fallback"', RESTORE_HINT, 'format.md §5 C4'),
  r('DSH-C5', 'error', 'restore-message-shape', 'A message event fails the restore-time message-shape check', RESTORE_HINT, 'format.md §5 C5'),
  r('DSH-C6', 'error', 'restore-contiguity', 'The seed is not contiguous from seq 0', RESTORE_HINT, 'format.md §5 C6'),
  r('DSH-C7', 'error', 'surface', 'An event fails surface acceptance (other surface rule)', RESTORE_HINT, 'format.md §5 C7, §6.1'),
  r('DSH-S1', 'error', 'surface-contiguity', 'Surface fold: event seq is not contiguous (S1)', RESTORE_HINT, 'format.md §6.1 S1'),
  r('DSH-S2', 'error', 'surface-ineligible-marker', 'Surface fold: a non-surface event carries surfaceOp or sourceEventSeqs (S2)', RESTORE_HINT, 'format.md §6.1 S2'),
  r('DSH-S3', 'error', 'surface-missing-op', 'Surface fold: a surface-eligible event lacks a surfaceOp marker (S3)', RESTORE_HINT, 'format.md §6.1 S3'),
  r('DSH-S4', 'error', 'surface-invalid-op', 'Surface fold: surfaceOp is neither "append" nor a valid replace object (S4)', RESTORE_HINT, 'format.md §6.1 S4'),
  r('DSH-S5', 'error', 'surface-replace-span', 'Surface fold: a replace names a start/end not on the surface, or in reverse order (S5)', RESTORE_HINT, 'format.md §6.1 S5'),
  r('DSH-S6', 'error', 'sources-not-array', 'Surface fold: sourceEventSeqs is present but not an array (S6)', RESTORE_HINT, 'format.md §6.1 S6'),
  r('DSH-S7', 'error', 'sources-empty', 'Surface fold: empty sourceEventSeqs on a type other than assistant/message (S7)', RESTORE_HINT, 'format.md §6.1 S7'),
  r('DSH-S8', 'error', 'sources-invalid', 'Surface fold: sourceEventSeqs holds a hole or a value that is not a non-negative safe integer (S8)', RESTORE_HINT, 'format.md §6.1 S8'),
  r('DSH-S9', 'error', 'sources-duplicate', 'Surface fold: sourceEventSeqs holds duplicates (S9)', RESTORE_HINT, 'format.md §6.1 S9'),
  r('DSH-S10', 'error', 'sources-not-earlier', 'Surface fold: sourceEventSeqs cites an event that is not earlier (S10)', RESTORE_HINT, 'format.md §6.1 S10'),
  r('DSH-S10B', 'error', 'sources-miss-shadowed', 'Surface fold: a replacement does not cite every shadowed surface node (S10b)', RESTORE_HINT, 'format.md §6.1 S10b'),
  r('DSH-S11', 'error', 'tool-result-rewrite-target', 'Surface fold: a tool/result replacement does not rewrite exactly one current tool/result (S11)', RESTORE_HINT, 'format.md §6.1 S11'),
  r('DSH-S12', 'error', 'tool-result-rewrite-content', 'Surface fold: a tool/result replacement changes more than content (S12)', RESTORE_HINT, 'format.md §6.1 S12'),
  r('DSH-R2', 'error', 'closers-crash', "DSH's crash-closer computation throws on malformed data", RESTORE_HINT, 'format.md §8'),
  // E. Core relational invariants
  r('DSH-E1', 'warning', 'seq-increase', 'seq must strictly increase', INVARIANT_HINT, 'format.md §5 E1'),
  r('DSH-E2', 'warning', 'turn-start', 'turn/start while a turn is open, or out of turn numbering', INVARIANT_HINT, 'format.md §5 E2'),
  r('DSH-E3', 'warning', 'turn-end', 'turn/end does not match the open turn, or a step is still open', INVARIANT_HINT, 'format.md §5 E3'),
  r('DSH-E4', 'warning', 'step-start', 'step/start outside its turn, while a step is open, or out of step numbering', INVARIANT_HINT, 'format.md §5 E4'),
  r('DSH-E5', 'warning', 'open-step-names', 'A step-scoped event does not name the open turn/step', INVARIANT_HINT, 'format.md §5 E5'),
  r('DSH-E6', 'warning', 'tool-result-pairing', 'An append tool/result has no prior tool/call in its step', INVARIANT_HINT, 'format.md §5 E6'),
  r('DSH-E7', 'warning', 'tool-result-replace-turn', 'A tool/result replacement is outside any open turn', INVARIANT_HINT, 'format.md §5 E7'),
  r('DSH-E8', 'warning', 'turn-enclosed', 'todo/write, request/header or request/context outside any open turn', INVARIANT_HINT, 'format.md §5 E8'),
  // F. Plugin invariants
  r('DSH-F1', 'warning', 'compaction-brackets', 'Compaction brackets violate the dsh-compaction invariant', INVARIANT_HINT, 'format.md §5 F1, §9'),
  r('DSH-F2', 'warning', 'llm-retry', 'llm/retry or llm/retry-started violates the dsh-llm-retry invariant', INVARIANT_HINT, 'format.md §5 F2, §11.1'),
  r('DSH-F3', 'warning', 'dispatch-header', 'A model dispatch (first assistant/chunk of an attempt) has no request/header before it', 'the request cannot be reconstructed: the loop writes a request/header before its first attempt', 'format.md §7.3, §7.5, §7.6'),
  r('DSH-F4', 'warning', 'orphan-compaction-lock', 'A compaction/start is unmatched and no later session/end-seed makes it stale (active lock)', 'a crash mid-compaction: DSH treats the lock as active until a new lifecycle (session/end-seed) begins', 'format.md §9.4'),
  // Lineage and repair
  r('DSH-L1', 'warning', 'fork-seed', "A fork child's seed does not equal its parent's prefix, or lacks session/end-seed at seedLength", 'the child was not produced by SessionStore.fork from this parent (or one of the two was altered)', 'format.md §10.1, §10.2'),
  r('DSH-R1', 'warning', 'crash-closers', 'The last turn is open: DSH synthesizes crash closers on load', "DSH's committing load() appends the listed closers; inspect shows them without writing", 'format.md §8'),
  // Compaction audit (dsh's own rules; DSH's compaction seam never selects such a span, but nothing checks the log)
  r('DSH-F5', 'warning', 'compaction-tool-pairing', 'A surface replacement splits a tool call from its result: one half is shadowed, the other stays on the surface', 'the next request carries an orphaned tool call or tool result; DSH\'s compaction selects only tool-pairing-balanced spans, so the writer was not DSH\'s compaction seam (see: dsh compactions)', 'format.md §9, compaction tool-pairing; issue 9'),
  // Secrets (`--secrets` only; dsh's own rules, see: dsh secrets)
  r('DSH-K1', 'warning', 'secret-current', 'A secret found by the redaction detectors is on the current model surface (or in the latest request header): a resumed session sends it again', 'rotate the secret; to share the log, use dsh redact; see dsh secrets for where it sits', 'dsh secrets; issue 22'),
  r('DSH-K2', 'info', 'secret-sent', 'A secret found by the redaction detectors was sent to the model provider in at least one dispatch', 'the provider received it: rotate the secret; see dsh secrets for the dispatches', 'dsh secrets; issue 22'),
  // Agent behaviour (`--behaviour` or the config only; dsh's own rules, thresholds in `dsh check --print-config`)
  r('DSH-X1', 'warning', 'tool-loop', 'The same tool call (name and canonical arguments) repeated min (3) times in a turn with no change in between', 'the agent is looping: look at what it expected the repeat to change; cap repeats in the agent prompt or tool', 'tool/call events of one turn; issue 50'),
  r('DSH-X2', 'info', 'redundant-read', "A tool call's result is byte-identical to an earlier result of the same call that is still on the surface", 'the model already had this output; the copy only adds input tokens to every later dispatch (see: dsh request)', 'tool/result events, the surface fold; issue 50'),
  r('DSH-X3', 'warning', 'error-streak', 'min (3) tool errors in a row within a turn', 'an error spiral: the agent keeps trying without new information; read the first error (dsh trace SEQ)', 'tool/result isError; issue 50'),
  r('DSH-X4', 'warning', 'repeated-failure', 'The same tool call failed again after an error in the same turn', 'retrying an identical failing call cannot succeed unless something changed; fix the arguments or the environment first', 'tool/result isError, tool/call arguments; issue 50'),
  r('DSH-X5', 'warning', 'retry-storm', 'min (3) llm/retry events in one turn', 'the provider kept failing: check its status, rate limits and the retry policy (see: dsh replay)', 'llm/retry (format.md §11.1); issue 50'),
  r('DSH-X6', 'info', 'carried-result', 'A large tool result (minBytes, 16384) stayed on the surface through minDispatches (5) or more dispatches', 'every dispatch re-sent it: prune or summarize large outputs sooner; the figures are exact dispatch sets, tokens by DSH\'s estimate', 'the surface fold and dispatch starts (as dsh secrets); data/prices.json; issue 50'),
  r('DSH-X7', 'warning', 'compaction-thrash', 'A compaction started fewer than minSteps (2) steps after the previous one', 'compaction is thrashing: the context refills as fast as it is freed; raise the budget or shrink what each step adds', 'compaction/start events; issue 50'),
  r('DSH-X8', 'info', 'low-yield-compaction', 'A compaction freed less than minFreedPercent (20%) of the estimated context', 'the summary is nearly as large as what it replaced, or the span was small; check the compaction span and summary (see: dsh compactions)', 'surface replacements with a compactionId; DSH\'s token meter; issue 50'),
  r('DSH-X9', 'warning', 'interrupted-side-effect', 'A turn ended interrupted after a tool that may have side effects started (TOOL_OUTCOME_UNKNOWN)', 'verify the external state the tool may have changed before resuming; list read-only tools with readOnlyTools', "crash closers' TOOL_OUTCOME_UNKNOWN (format.md §8); issue 50"),
  r('DSH-X10', 'warning', 'unoffered-tool', 'The model asked for a tool the request header in force did not offer', 'the model hallucinated a tool or the tool list changed under it; check the header (dsh request)', 'assistant/message tool-call blocks, request/header tools; issue 50'),
  r('DSH-X11', 'warning', 'invalid-arguments', 'The model called a tool with arguments that are not valid JSON', 'the call cannot have run as the model meant it; check the model, its max tokens and the tool schema', 'assistant/message tool-call blocks; issue 50'),
  r('DSH-X12', 'info', 'header-cache-break', 'A request/header change in the middle of a session (system prompt, tool list, model) broke the prompt cache: the next dispatch re-sent its prompt uncached', 'keep the system prompt and tool schemas fixed for a session, or change them only where the context is rebuilt anyway; see dsh context --breaks for what it cost', 'request/header, the dispatch index and the DeepSeek body order (dsh context); data/prices.json; issue 49'),
];

export const RULE_BY_CODE: ReadonlyMap<string, RuleMeta> = new Map(RULES.map((x) => [x.code, x]));

export function ruleMeta(code: string): RuleMeta {
  const m = RULE_BY_CODE.get(code);
  if (!m) throw new Error(`unknown rule ${code}`);
  return m;
}

/**
 * Expand a user's code list: exact codes (case-insensitive, `DSH-` optional)
 * or family prefixes (`A`, `DSH-E`, `S`). Unknown entries are returned apart.
 */
export function expandCodes(list: string): { codes: Set<string>; unknown: string[] } {
  const codes = new Set<string>();
  const unknown: string[] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    const up = raw.toUpperCase();
    const full = up.startsWith('DSH-') ? up : `DSH-${up}`;
    if (RULE_BY_CODE.has(full)) {
      codes.add(full);
      continue;
    }
    const family = RULES.filter((x) => /^DSH-[A-Z]$/.test(full) && x.code.startsWith(full) && /\d/.test(x.code.charAt(full.length)));
    if (family.length > 0) family.forEach((x) => codes.add(x.code));
    else unknown.push(raw);
  }
  return { codes, unknown };
}
