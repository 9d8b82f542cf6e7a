import { ArtifactEncoder, ArtifactFileWriter, type WriteOptions } from '../src/log/writer.js';
import type { Encoding, SessionEvent, SessionHeader, SurfaceOp } from '../src/log/types.js';

/**
 * Deterministic, seeded synthetic DSH session logs (format.md §4, §7.4, §9,
 * §10, §11): turns with streamed chunk runs, tool calls with 1-50 KB results,
 * automatic compactions, tool-result prunes, header changes, LLM retries,
 * resumes (`session/end-seed` + `resume` header), optional fork seeds, and
 * optional crash tails / torn final writes. Batches are yielded one at a time
 * so multi-GB logs never sit in memory.
 */

export type CrashMode = 'mid-tool' | 'mid-stream' | null;
export type TurnFeature = 'compaction' | 'prune' | 'retry' | 'header-change' | 'resume' | 'title' | 'todo' | 'cjk';

export interface GenerateOptions {
  seed: number;
  id: string;
  /** Absolute working directory; `null` → no cwd (DSH `_no-cwd`). Default `/home/dev/project`. */
  cwd?: string | null;
  /** Approximate logical JSONL bytes; generation stops at the first turn boundary past it. */
  targetBytes?: number;
  /** Exact number of turns to write (the crash turn, if any, included). Overrides targetBytes. */
  turns?: number;
  /** Header `createdAt` and the time anchor (default 1785000000000, fixed for determinism). */
  createdAt?: number;
  /** End the log inside an open step of the last turn. */
  crash?: CrashMode;
  /**
   * Also yield, as the final batch, the write that was in flight when the
   * process died (a crash's lost batch, or else the last batch itself), for a
   * writer to tear in half. `lastBatchTorn` tells the consumer.
   */
  tornTail?: boolean;
  /** Cut a batch after at most this many events (default 256). */
  maxBatchEvents?: number;
  /** Event types after which a batch is cut (default request/header, tool/call, turn/end). */
  cutAfter?: readonly string[];
  /** Features forced on given turn numbers. */
  features?: Record<number, readonly TurnFeature[]>;
  /** Draw further features at random (default true). */
  randomFeatures?: boolean;
  /** Tool output size range in bytes (default [1024, 51200]). */
  toolOutputBytes?: readonly [number, number];
  /** Scale of assistant text (1 = default). */
  verbosity?: number;
  /** Fork child: the parent's inclusive event prefix (must not end inside an open turn). */
  fork?: { parentId: string; seed: readonly SessionEvent[] };
  agentPreset?: string;
  delegationDepth?: number;
  origin?: 'subagent';
  /**
   * Scripted content (the bundled incident sample): turns listed here take their
   * texts, steps, tool calls and outputs from the script instead of random words;
   * the structure (features, crash, batching) and timings still come from the options
   * and the seed. Without a script the output is unchanged.
   */
  script?: SessionScript;
}

/** One tool call of a scripted step and the output the tool returned. */
export interface ScriptedCall {
  name: string;
  args: Record<string, unknown>;
  output: string;
  isError?: boolean;
}

/** One agent step: optional reasoning, the visible text, then its tool calls. */
export interface ScriptedStep {
  reasoning?: string;
  text: string;
  calls?: ScriptedCall[];
}

export interface ScriptedTurn {
  user: string;
  steps: ScriptedStep[];
  /** Turn with the 'retry' feature: what the failed attempt streamed before it failed, and why it failed. */
  failedAttempt?: { text: string; failure: Record<string, unknown> };
  /** Turn with the 'compaction' feature: the summary that replaces the earlier turns. */
  compactionSummary?: string;
  /** Turn with the 'retry' feature: how many failed attempts (one retry chain) precede the step's own (default 1). */
  retries?: number;
}

export interface SessionScript {
  /** Title written after turn 1 (with the 'title' feature). */
  title?: string;
  /** System prompt of the request header. */
  system?: string;
  /** By turn number (a fork's first own turn continues the parent's numbering). */
  turns: Record<number, ScriptedTurn>;
}

export interface GeneratedSession extends Iterable<SessionEvent[]> {
  readonly header: SessionHeader;
  /** After iteration: true when the last batch was the in-flight (to be torn) write. */
  readonly lastBatchTorn: boolean;
  /** After iteration: summary numbers. */
  readonly stats: GenerateStats;
}

export interface GenerateStats {
  events: number;
  batches: number;
  turns: number;
  approxBytes: number;
  /** Events of the in-flight batch (not durable), when `tornTail`. */
  inFlightEvents: number;
  compactions: number;
  prunes: number;
  retries: number;
  headerChanges: number;
}

export const DEFAULT_CREATED_AT = 1785000000000;
/** The running size estimate undercounts JSON framing by about this factor (measured). */
const SIZE_CALIBRATION = 1.12;
const DEFAULT_CWD = '/home/dev/project';
const PROVIDER = 'deepseek-official';
const MODELS = ['deepseek-v4-flash', 'deepseek-v4-pro'] as const;
const CHECKPOINT_PREAMBLE =
  'This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. Treat the captured context as established background and build on it without restating it. Continue the task directly from the messages that follow, without acknowledging this checkpoint.';

export function generatedHeader(opts: GenerateOptions): SessionHeader {
  const h: SessionHeader = { version: 0, id: opts.id, createdAt: opts.createdAt ?? DEFAULT_CREATED_AT, delegationDepth: opts.delegationDepth ?? 0 };
  const cwd = opts.cwd === undefined ? DEFAULT_CWD : opts.cwd;
  if (cwd !== null) h.cwd = cwd;
  if (opts.fork) {
    h.parentSession = opts.fork.parentId;
    h.seedLength = opts.fork.seed.length;
  }
  if (opts.origin) h.origin = opts.origin;
  if (opts.agentPreset !== undefined) h.agentPreset = opts.agentPreset;
  return h;
}

// ---------------------------------------------------------------------------
// PRNG and content pools

/** mulberry32: small, fast, deterministic. */
class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = (seed >>> 0) ^ 0x9e3779b9;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(arr: readonly T[]): T {
    return arr[Math.floor(this.next() * arr.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** Log-uniform integer in [lo, hi]. */
  logInt(lo: number, hi: number): number {
    return Math.round(Math.exp(Math.log(lo) + this.next() * (Math.log(hi) - Math.log(lo))));
  }
  hex(n: number): string {
    let s = '';
    while (s.length < n) s += Math.floor(this.next() * 0x100000000).toString(16).padStart(8, '0');
    return s.slice(0, n);
  }
  uuid(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
}

const WORDS = (
  'the a to of and in is for that this it with on be as we by function file test build error value type ' +
  'return module import export const let config option should will can not need update change fix add remove ' +
  'check run script output input path directory package version cache index session event frame header line ' +
  'parse decode encode stream buffer chunk block offset size length count number string object array map set ' +
  'async await promise callback handler request response server client query result data state store log ' +
  'trace debug warning failure retry timeout limit memory disk write read open close lock release commit ' +
  'branch merge diff patch review comment docs readme example case edge boundary invariant schema field key ' +
  'first last next previous current before after during while because so then now also only just again'
).split(' ');
const CJK = (
  '我们 需要 检查 这个 文件 的 内容 然后 修改 配置 测试 通过 了 构建 失败 因为 缺少 依赖 请 运行 命令 ' +
  '会话 日志 压缩 帧 校验 错误 已经 修复 下一步 继续 分析 结果 显示 问题 在于 路径 编码'
).split(' ');
const DIRS = ['src', 'src/log', 'src/physical', 'src/cli', 'test', 'packages/core/session/src', 'scripts', 'docs'];
const FILES = ['index', 'reader', 'writer', 'frames', 'scanner', 'header', 'rows', 'surface', 'repair', 'format', 'main', 'util'];
const EXTS = ['.ts', '.ts', '.ts', '.md', '.json', '.js'];
const TOOL_NAMES = ['bash', 'read_file', 'grep', 'edit_file', 'list_dir'] as const;

function toolSchemas(extra: boolean): unknown[] {
  const s = (name: string, description: string, props: Record<string, string>) => ({
    name,
    description,
    parameters: {
      type: 'object',
      properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, { type: 'string', description: d }])),
      required: Object.keys(props),
    },
  });
  const tools = [
    s('bash', 'Run a shell command in the workspace and return its combined stdout and stderr. Long outputs are truncated.', { command: 'The command line to run' }),
    s('read_file', 'Read a UTF-8 text file from the workspace, optionally a line range.', { path: 'Workspace-relative path' }),
    s('grep', 'Search files with a regular expression (ripgrep syntax) and return matching lines with line numbers.', { pattern: 'Regular expression', path: 'Directory or file to search' }),
    s('edit_file', 'Replace an exact string in a file. The old string must occur exactly once.', { path: 'File to edit', old: 'Exact text to replace', new: 'Replacement text' }),
    s('list_dir', 'List a directory (one entry per line, directories end with /).', { path: 'Directory' }),
  ];
  if (extra) tools.push(s('web_search', 'Search the web and return the top results with titles, URLs and snippets.', { query: 'Search query' }));
  return tools;
}

function systemPrompt(rng: Rng): string {
  const parts = [
    'You are DSH, a coding agent working in a local repository. Be precise and concise.',
    'Follow the repository conventions. Prefer small, verifiable changes. Run the tests after each change.',
  ];
  for (let i = 0; i < 40; i++) {
    const n = rng.int(8, 24);
    const w: string[] = [];
    for (let k = 0; k < n; k++) w.push(rng.pick(WORDS));
    parts.push(`- ${w.join(' ')}.`);
  }
  return parts.join('\n');
}

// ---------------------------------------------------------------------------

interface Header {
  config: { provider: string; model: string; reasoningEffort?: string };
  system: string;
  tools: unknown[];
}

interface ToolResultRecord {
  seq: number;
  data: any;
  chars: number;
  lines: number;
}

interface PlannedCall {
  id: string;
  name: string;
  args: string;
}

class Gen {
  readonly rng: Rng;
  seq = 0;
  now: number;
  turn = 0;
  idCounter = 0;
  /** Surface nodes (seqs in model-visible order). */
  nodes: number[] = [];
  lastTurnFirstNodeIdx = 0;
  header: Header;
  lastContext: { provider: string; model: string; contextWindow: number } | undefined;
  headerReason: 'initial' | 'resume' | null = 'initial';
  toolResults: ToolResultRecord[] = [];
  approxBytes = 0;
  compactionCounter = 0;
  retryCounter = 0;
  lines: string[];
  titleWritten = false;
  stats: GenerateStats = { events: 0, batches: 0, turns: 0, approxBytes: 0, inFlightEvents: 0, compactions: 0, prunes: 0, retries: 0, headerChanges: 0 };

  // batching
  pending: SessionEvent[] = [];
  ready: SessionEvent[][] = [];
  inFlight: SessionEvent[] | null = null;
  readonly cut: Set<string>;
  readonly maxBatch: number;

  constructor(readonly opts: GenerateOptions, readonly createdAt: number) {
    this.rng = new Rng(opts.seed);
    this.now = createdAt;
    this.cut = new Set(opts.cutAfter ?? ['request/header', 'tool/call', 'turn/end']);
    this.maxBatch = opts.maxBatchEvents ?? 256;
    const system = systemPrompt(this.rng);
    this.header = { config: { provider: PROVIDER, model: MODELS[0] }, system: opts.script?.system ?? system, tools: toolSchemas(false) };
    this.lines = [];
    for (let i = 0; i < 2048; i++) this.lines.push(this.makeLine());
  }

  // --- primitives ---------------------------------------------------------

  tick(lo: number, hi: number): number {
    this.now += this.rng.int(lo, hi);
    return this.now;
  }

  msgId(): string {
    return this.rng.uuid();
  }

  words(n: number, cjk: boolean): string {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(cjk && this.rng.chance(0.7) ? this.rng.pick(CJK) : this.rng.pick(WORDS));
    return out.join(cjk ? '' : ' ');
  }

  /** A scripted text as stream deltas of one or two words (whitespace kept, so the deltas join to the text). */
  deltas(text: string): string[] {
    const words = text.match(/\S+\s*/g) ?? [];
    const lead = /^\s*/.exec(text)?.[0] ?? '';
    const out: string[] = [];
    for (let i = 0; i < words.length; ) {
      const n = Math.min(words.length - i, this.rng.int(1, 2));
      out.push(words.slice(i, i + n).join(''));
      i += n;
    }
    if (lead && out.length > 0) out[0] = lead + out[0];
    return out.length > 0 ? out : [text];
  }

  makeLine(): string {
    const r = this.rng;
    switch (r.int(0, 4)) {
      case 0:
        return `${r.pick(DIRS)}/${r.pick(FILES)}${r.pick(EXTS)}:${r.int(1, 900)}:${r.int(1, 80)}: ${this.words(r.int(3, 10), false)}`;
      case 1:
        return `  const ${r.pick(WORDS)}${r.int(0, 99)} = ${r.pick(WORDS)}(${r.pick(WORDS)}, ${r.int(0, 65535)}); // ${this.words(r.int(2, 6), false)}`;
      case 2:
        return `[${r.hex(8)}] ${r.pick(['INFO', 'DEBUG', 'WARN', 'ERROR'])} ${this.words(r.int(4, 12), false)} (${r.int(1, 5000)} ms)`;
      case 3:
        return ` ${r.pick(['✓', '✓', '✓', '×'])} ${r.pick(DIRS)}/${r.pick(FILES)}.test.ts > ${this.words(r.int(3, 8), false)} ${r.int(1, 400)}ms`;
      default:
        return `    if (${r.pick(WORDS)}.${r.pick(WORDS)} !== ${r.int(0, 9999)}) throw new Error(${JSON.stringify(this.words(r.int(3, 7), false))});`;
    }
  }

  toolOutput(bytes: number): { text: string; lines: number } {
    const out: string[] = [];
    let size = 0;
    let n = 0;
    while (size < bytes) {
      const line = `${++n}\t${this.rng.pick(this.lines)}`;
      out.push(line);
      size += line.length + 1;
    }
    return { text: out.join('\n') + '\n', lines: n };
  }

  event(type: string, data: unknown, surface?: { sources?: number[]; op: SurfaceOp }, time?: number): SessionEvent {
    const e = { type, seq: this.seq++, time: time ?? this.tick(1, 4), data } as SessionEvent;
    if (surface) {
      if (surface.sources) e.sourceEventSeqs = surface.sources;
      e.surfaceOp = surface.op;
      if (surface.op === 'append') this.nodes.push(e.seq);
      else {
        const a = this.nodes.indexOf(surface.op.start);
        const b = this.nodes.indexOf(surface.op.end);
        if (a < 0 || b < a) throw new Error(`generator bug: bad replace ${surface.op.start}..${surface.op.end}`);
        this.nodes.splice(a, b - a + 1, e.seq);
      }
    }
    this.push(e);
    return e;
  }

  push(e: SessionEvent): void {
    this.stats.events++;
    if (this.inFlight) {
      this.inFlight.push(e);
      return;
    }
    this.pending.push(e);
    if (this.cut.has(e.type) || this.pending.length >= this.maxBatch) this.flush();
  }

  flush(): void {
    if (this.pending.length > 0) {
      this.ready.push(this.pending);
      this.pending = [];
    }
  }

  /** The crash point: everything so far is durable; later events were in flight. */
  crashCut(): void {
    this.flush();
    this.inFlight = [];
  }

  size(n: number): void {
    this.approxBytes += n;
  }

  // --- seeding -----------------------------------------------------------

  seedFrom(prefix: readonly SessionEvent[]): void {
    let open = false;
    for (const src of prefix) {
      const e = JSON.parse(JSON.stringify(src)) as SessionEvent;
      if (e.seq !== this.seq) throw new Error(`fork seed is not contiguous at index ${this.seq}`);
      this.seq++;
      // The generator's own events: their data is what it wrote.
      const d = e.data as Record<string, any>;
      if (e.type === 'turn/start') {
        this.turn = d.turn;
        open = true;
      } else if (e.type === 'turn/end') open = false;
      else if (e.type === 'request/header') this.header = JSON.parse(JSON.stringify(d.header));
      else if (e.type === 'request/context') this.lastContext = d as typeof this.lastContext;
      else if (e.type === 'compaction/start') this.compactionCounter++;
      if (e.surfaceOp === 'append') this.nodes.push(e.seq);
      else if (e.surfaceOp) {
        const a = this.nodes.indexOf(e.surfaceOp.start);
        const b = this.nodes.indexOf(e.surfaceOp.end);
        if (a >= 0 && b >= a) this.nodes.splice(a, b - a + 1, e.seq);
      }
      if (e.type === 'tool/result' && e.surfaceOp === 'append') this.rememberResult(e);
      this.stats.events++;
      this.pending.push(e);
    }
    if (open) throw new Error(`fork seed ends inside open turn ${this.turn}`);
    this.lastTurnFirstNodeIdx = this.nodes.length;
    const last = prefix[prefix.length - 1];
    this.now = Math.max(this.now, last ? last.time : 0);
    // The child's constructor appends session/end-seed (its first write).
    this.event('session/end-seed', {}, undefined, this.now);
    this.flush();
    this.headerReason = prefix.some((e) => e.type === 'request/header') ? 'resume' : 'initial';
  }

  rememberResult(e: SessionEvent): void {
    const block = (e.data as Record<string, any> | undefined)?.message?.content?.[0];
    const text = block?.content?.[0]?.text;
    if (typeof text !== 'string') return;
    this.toolResults.push({ seq: e.seq, data: e.data, chars: text.length, lines: text.split('\n').length - 1 });
    if (this.toolResults.length > 32) this.toolResults.shift();
  }

  // --- turn anatomy --------------------------------------------------------

  features(turn: number): Set<TurnFeature> {
    const f = new Set<TurnFeature>(this.opts.features?.[turn] ?? []);
    if (this.opts.randomFeatures ?? true) {
      const r = this.rng;
      if (this.nodes.length > 60 && r.chance(0.08)) f.add('compaction');
      if (r.chance(0.06)) f.add('prune');
      if (r.chance(0.05)) f.add('retry');
      if (r.chance(0.03)) f.add('header-change');
      if (r.chance(0.02)) f.add('resume');
      if (r.chance(0.04)) f.add('todo');
      if (r.chance(0.1)) f.add('cjk');
    }
    return f;
  }

  /** One whole turn; `crash` ends it inside an open step of its last step. */
  turnEvents(crash: CrashMode): void {
    const r = this.rng;
    const turn = ++this.turn;
    const script = this.opts.script?.turns[turn];
    const f = this.features(turn);
    const cjk = f.has('cjk');
    if (f.has('resume')) {
      // A later process resumed the session: its Session constructor wrote end-seed.
      this.now += r.int(60_000, 3_600_000);
      this.event('session/end-seed', {});
      this.flush();
      this.headerReason = 'resume';
    }
    this.now += r.int(2_000, 90_000); // user think time
    this.event('turn/start', { turn });
    if (f.has('prune')) this.prune();
    if (f.has('compaction')) this.compaction(turn, script?.compactionSummary);
    this.lastTurnFirstNodeIdx = this.nodes.length;
    const steps = script ? script.steps.length : crash ? r.int(1, 3) : r.int(1, 5);
    for (let step = 1; step <= steps; step++) {
      const last = step === steps;
      const stepCrash = last ? crash : null;
      this.flush(); // agent/pre-step checkpoint
      this.event('step/start', { turn, step });
      const scripted = script?.steps[step - 1];
      if (step === 1) {
        const text = script ? script.user : this.words(r.int(6, 60), cjk);
        const data = { content: [{ type: 'text', text }], source: { kind: 'user' }, role: 'user', id: this.msgId() };
        this.event('user/message', data, { op: 'append' });
        this.size(200 + text.length * (cjk ? 3 : 1));
      }
      this.requestHeader(step === 1 && f.has('header-change'));
      if (step === 1 && f.has('todo')) {
        const todos = [];
        for (let i = r.int(2, 5); i > 0; i--) todos.push({ content: this.words(r.int(3, 8), false), status: r.pick(['pending', 'in_progress', 'completed']) });
        this.event('todo/write', { todos });
        this.size(300);
      }
      if (step === 1 && f.has('retry')) {
        let retryId: string | undefined;
        for (let k = 1; k <= (script?.retries ?? 1); k++) retryId = this.failedAttempt(turn, step, script?.failedAttempt, k, retryId);
      }
      const calls = scripted ? (scripted.calls ?? []).length : last && !stepCrash ? 0 : stepCrash === 'mid-stream' ? 0 : r.int(1, 3) + (stepCrash ? 1 : 0);
      const attempt = this.attempt(turn, step, calls, cjk, stepCrash === 'mid-stream', scripted);
      if (!attempt) return; // crashed mid-stream
      this.assistantMessage(turn, step, attempt);
      for (let c = 0; c < attempt.calls.length; c++) {
        const call = attempt.calls[c]!;
        const callEvent = this.event('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.args }, undefined, this.tick(1, 3));
        this.size(150 + call.args.length);
        // mid-tool crash: the first call is durable (checkpointed before its body);
        // its result and the next call were the lost write.
        if (stepCrash === 'mid-tool' && c === 0) this.crashCut();
        if (stepCrash === 'mid-tool' && c === 1) return;
        this.toolResult(turn, step, call, callEvent.seq, scripted?.calls?.[c]);
      }
      if (stepCrash === 'mid-tool') return;
      this.event('step/end', { turn, step });
    }
    this.event('turn/end', { turn, reason: { kind: 'completed' } });
    this.stats.turns++;
    if (turn === 1 && !this.titleWritten && ((this.opts.randomFeatures ?? true) || f.has('title'))) {
      this.titleWritten = true;
      const firstUser = this.nodes[0] ?? 0;
      const title = this.words(r.int(3, 7), cjk);
      this.event('session/title', { title: this.opts.script?.title ?? title, messageSeqs: [firstUser], source: { kind: 'fallback' } });
    }
  }

  requestHeader(change: boolean): void {
    const r = this.rng;
    let reason: 'initial' | 'resume' | 'change' | null = this.headerReason;
    if (change) {
      const h = JSON.parse(JSON.stringify(this.header)) as Header;
      // The first change of a session switches the model; later ones vary.
      const which = this.stats.headerChanges === 0 ? 0 : r.int(0, 2);
      if (which === 0 || h.config.model === MODELS[1]) {
        h.config = h.config.model === MODELS[0] ? { provider: PROVIDER, model: MODELS[1], reasoningEffort: 'high' } : { provider: PROVIDER, model: MODELS[0] };
      } else if (which === 1) {
        h.tools = toolSchemas(h.tools.length <= 5);
      } else {
        h.system = `${h.system}\n- ${this.words(r.int(10, 30), false)}.`;
      }
      this.header = h;
      reason ??= 'change';
      this.stats.headerChanges++;
    }
    if (reason === null) return;
    this.headerReason = null;
    this.event('request/header', { header: this.header, reason });
    this.size(JSON.stringify(this.header).length + 100);
    const model = this.header.config.model;
    const ctx = { provider: PROVIDER, model, contextWindow: model === MODELS[1] ? 256000 : 128000 };
    if (!this.lastContext || this.lastContext.model !== ctx.model || this.lastContext.contextWindow !== ctx.contextWindow) {
      this.lastContext = ctx;
      this.event('request/context', ctx);
      this.size(120);
    }
  }

  chunk(turn: number, step: number, chunk: unknown, lo = 8, hi = 60): SessionEvent {
    // A rare wall-clock step back (dt may be negative).
    const dt = this.rng.chance(0.002) ? -this.rng.int(1, 5) : this.rng.int(lo, hi);
    this.now += dt;
    return this.event('assistant/chunk', { turn, step, chunk }, undefined, this.now);
  }

  /** One failed attempt and its `llm/retry` (the `retry`-th of the chain `chain`, a new chain when absent); returns the chain's id. */
  failedAttempt(turn: number, step: number, scripted?: ScriptedTurn['failedAttempt'], retry = 1, chain?: string): string {
    const r = this.rng;
    this.chunk(turn, step, { type: 'block-start', index: 0, blockType: 'text' }, 300, 2000);
    if (scripted) for (const text of this.deltas(scripted.text)) this.chunk(turn, step, { type: 'text-delta', index: 0, text });
    else for (let i = r.int(1, 4); i > 0; i--) this.chunk(turn, step, { type: 'text-delta', index: 0, text: this.words(r.int(1, 2), false) + ' ' });
    const drawn = r.chance(0.5)
      ? { message: 'upstream connection reset', code: 'TRANSPORT' }
      : { message: 'provider overloaded, retry later', code: 'RATE_LIMITED', status: 503, providerRetryAfterMs: 1000 };
    const failure = scripted?.failure ?? drawn;
    this.chunk(turn, step, { type: 'finish', reason: { kind: 'error', failure } });
    const retryId = chain ?? this.rng.uuid();
    const delayMs = r.int(200, 4000);
    this.event('llm/retry', {
      retryId, turn, step, provider: this.header.config.provider, mode: 'normal',
      policyKey: '["normal",3,["TRANSPORT","RATE_LIMITED"],500,2,30000]', retry, maxRetries: Math.max(3, retry), delayMs, failure,
    });
    this.now += delayMs;
    this.event('llm/retry-started', { retryId, turn, step, retry });
    this.retryCounter++;
    this.stats.retries++;
    this.size(1200);
    return retryId;
  }

  attempt(turn: number, step: number, nCalls: number, cjk: boolean, crashMidStream: boolean, scripted?: ScriptedStep):
    { seqs: number[]; content: unknown[]; usage: Record<string, number>; calls: PlannedCall[]; finish: string } | null {
    const r = this.rng;
    const seqs: number[] = [];
    const content: unknown[] = [];
    const calls: PlannedCall[] = [];
    const verbosity = this.opts.verbosity ?? 1;
    let index = 0;
    let first = true;
    let crashAt = -1;
    let emitted = 0;
    const c = (chunk: unknown) => {
      const e = this.chunk(turn, step, chunk, first ? 400 : 8, first ? 3000 : 60);
      first = false;
      seqs.push(e.seq);
      emitted++;
      if (crashMidStream && emitted === crashAt) this.crashCut();
      return e;
    };
    const textBlock = (blockType: 'text' | 'reasoning', tokens: number, given?: string) => {
      const i = index++;
      c({ type: 'block-start', index: i, blockType });
      const parts: string[] = [];
      const scriptedDeltas = given === undefined ? null : this.deltas(given);
      for (let k = 0; k < (scriptedDeltas ? scriptedDeltas.length : tokens); k++) {
        const t = scriptedDeltas ? (scriptedDeltas[k] as string) : cjk ? this.words(r.int(1, 2), true) : this.words(r.int(1, 2), false) + (r.chance(0.08) ? '.\n' : ' ');
        parts.push(t);
        c({ type: blockType === 'text' ? 'text-delta' : 'reasoning-delta', index: i, text: t });
        this.size(t.length * (cjk ? 3 : 1) + 12);
      }
      const text = parts.join('');
      c({ type: 'block-end', index: i, block: { type: blockType, text } });
      this.size(text.length * (cjk ? 3 : 1) + 150);
      content.push({ type: blockType, text });
    };
    const drawnReasoning = r.chance(0.7);
    const reasoning = scripted ? scripted.reasoning !== undefined : drawnReasoning;
    const textTokens = Math.max(3, Math.round(r.logInt(8, 400) * verbosity));
    if (crashMidStream) crashAt = Math.max(2, Math.floor(textTokens / 2));
    if (reasoning) textBlock('reasoning', Math.max(3, Math.round(r.logInt(10, 300) * verbosity)), scripted?.reasoning);
    textBlock('text', textTokens, scripted?.text);
    if (crashMidStream && this.inFlight) {
      // The stream never finished: keep only a part of it in flight.
      const keep = Math.min(this.inFlight.length, r.int(3, 12));
      this.stats.events -= this.inFlight.length - keep;
      this.inFlight.splice(keep);
      if (keep > 0) this.seq = this.inFlight[keep - 1]!.seq + 1;
      return null;
    }
    for (let k = 0; k < nCalls; k++) {
      const i = index++;
      const planned = scripted?.calls?.[k];
      const drawnName = r.pick(TOOL_NAMES);
      const name = planned ? planned.name : drawnName;
      const id = `call_${r.hex(24)}`;
      const args = planned ? JSON.stringify(planned.args) : this.toolArgs(name);
      c({ type: 'block-start', index: i, blockType: 'tool-call' });
      let at = 0;
      let firstDelta = true;
      while (at < args.length) {
        const n = r.int(3, 12);
        const piece = args.slice(at, at + n);
        at += n;
        c(firstDelta ? { type: 'tool-call-delta', index: i, id, name, argumentsDelta: piece } : { type: 'tool-call-delta', index: i, id, argumentsDelta: piece });
        firstDelta = false;
        this.size(piece.length + 12);
      }
      const block = { type: 'tool-call', id, name, arguments: args };
      c({ type: 'block-end', index: i, block });
      content.push(block);
      calls.push({ id, name, args });
      this.size(200 + args.length);
    }
    const input = r.int(2_000, 120_000);
    const usage: Record<string, number> = { inputTokens: input, outputTokens: r.int(20, 4000) };
    if (r.chance(0.8)) usage['cacheReadTokens'] = r.int(0, input * 4);
    if (reasoning) usage['reasoningTokens'] = r.int(10, usage['outputTokens']!);
    c({ type: 'usage', usage });
    const finish = nCalls > 0 ? 'tool-calls' : 'stop';
    c({ type: 'finish', reason: { kind: finish } });
    this.size(400);
    return { seqs, content, usage, calls, finish };
  }

  toolArgs(name: string): string {
    const r = this.rng;
    const file = `${r.pick(DIRS)}/${r.pick(FILES)}${r.pick(EXTS)}`;
    switch (name) {
      case 'bash':
        return JSON.stringify({ command: r.pick(['npx vitest run ', 'rg -n ', 'git diff -- ', 'node scripts/check.mjs ', 'ls -la ']) + (r.chance(0.5) ? file : r.pick(WORDS)) });
      case 'read_file':
        return JSON.stringify({ path: file });
      case 'grep':
        return JSON.stringify({ pattern: `${r.pick(WORDS)}\\(${r.pick(WORDS)}`, path: r.pick(DIRS) });
      case 'edit_file':
        return JSON.stringify({ path: file, old: this.rng.pick(this.lines), new: this.rng.pick(this.lines) });
      default:
        return JSON.stringify({ path: r.pick(DIRS) });
    }
  }

  assistantMessage(turn: number, step: number, a: { seqs: number[]; content: unknown[]; usage: Record<string, number> }): void {
    const message = { role: 'assistant', content: a.content, source: { kind: 'model', provider: this.header.config.provider, model: this.header.config.model }, id: this.msgId() };
    this.event('assistant/message', { turn, step, message, usage: a.usage }, { sources: a.seqs, op: 'append' }, this.tick(1, 5));
    this.size(300 + a.seqs.length * 6);
  }

  toolResult(turn: number, step: number, call: PlannedCall, callSeq: number, scripted?: ScriptedCall): void {
    const r = this.rng;
    const [lo, hi] = this.opts.toolOutputBytes ?? [1024, 51200];
    const text = scripted ? scripted.output : this.toolOutput(r.logInt(lo, hi)).text;
    const drawnError = r.chance(0.06);
    const isError = scripted ? scripted.isError === true : drawnError;
    const message = {
      source: { kind: 'tool', callId: call.id },
      content: [{ type: 'tool-result', toolCallId: call.id, content: [{ type: 'text', text }], isError }],
      role: 'user',
      id: this.msgId(),
    };
    const data: Record<string, unknown> = { turn, step, message };
    if (call.name === 'bash') data['meta'] = { exitCode: isError ? 1 : 0 };
    const e = this.event('tool/result', data, { sources: [callSeq], op: 'append' }, this.tick(40, 4000));
    this.rememberResult(e);
    this.size(text.length + 300);
  }

  prune(): void {
    const live = this.toolResults.filter((t) => this.nodes.includes(t.seq));
    if (live.length === 0) return;
    let target = live[0]!;
    for (const t of live) if (t.chars > target.chars) target = t;
    this.event('compaction/prune', { shadowedRange: { start: target.seq, end: target.seq }, shadowedSeqs: [target.seq], shadowedTokenCount: Math.ceil(target.chars / 4) });
    const data = JSON.parse(JSON.stringify(target.data));
    data.message.content[0].content = [{ type: 'text', text: `[tool output pruned: ${target.lines} lines, ${target.chars.toLocaleString('en-US')} chars]` }];
    this.event('tool/result', data, { sources: [target.seq], op: { op: 'replace', start: target.seq, end: target.seq } });
    this.toolResults = this.toolResults.filter((t) => t !== target);
    this.stats.prunes++;
    this.size(600);
  }

  compaction(turn: number, scriptedSummary?: string): void {
    const r = this.rng;
    let endIdx = this.lastTurnFirstNodeIdx - 1;
    if (endIdx < 1) endIdx = this.nodes.length - 2;
    if (endIdx < 1) return;
    const shadowed = this.nodes.slice(0, endIdx + 1);
    const compactionId = `compaction-${++this.compactionCounter}`;
    const start = this.event('compaction/start', { compactionId, turn });
    const drawn = `Summary ${this.compactionCounter}: ${this.words(r.int(60, 400), false)}.`;
    const summaryText = scriptedSummary ?? drawn;
    const summary = [{ type: 'text', text: summaryText }];
    this.now += r.int(2_000, 30_000);
    const sum = this.event('compaction/summary', {
      compactionId,
      summary,
      rawOutput: summary,
      llmStreamCall: true,
      shadowedRange: { start: shadowed[0]!, end: shadowed[shadowed.length - 1]! },
      shadowedSeqs: shadowed,
      shadowedTokenCount: shadowed.length * r.int(200, 2000),
      provider: this.header.config.provider,
      model: this.header.config.model,
      maxTokens: 8192,
      usage: { inputTokens: r.int(10_000, 100_000), outputTokens: r.int(100, 2000) },
    });
    const content = [{ type: 'text', text: `${CHECKPOINT_PREAMBLE}\n\n<compacted-summary>` }, ...summary, { type: 'text', text: '</compacted-summary>' }];
    this.event(
      'user/message',
      { content, source: { kind: 'plugin', plugin: 'compact', compactionId }, role: 'user', id: this.msgId() },
      { sources: [start.seq, sum.seq, ...shadowed], op: { op: 'replace', start: shadowed[0]!, end: shadowed[shadowed.length - 1]! } },
    );
    this.event('compaction/end', { compactionId, turn });
    this.stats.compactions++;
    this.size(summaryText.length * 2 + shadowed.length * 14 + 1500);
  }
}

/**
 * A seeded session as an iterable of durable batches (each becomes one zstd
 * frame / one raw append). Iterating twice regenerates identically.
 */
export function generateSession(opts: GenerateOptions): GeneratedSession {
  const header = generatedHeader(opts);
  const state = { lastBatchTorn: false, stats: undefined as GenerateStats | undefined };
  const iterate = function* (): Generator<SessionEvent[]> {
    const g = new Gen(opts, header.createdAt);
    state.stats = g.stats;
    state.lastBatchTorn = false;
    const crash = opts.crash ?? null;
    if (opts.fork) {
      g.seedFrom(opts.fork.seed);
      yield* drain(g);
    }
    const target = opts.targetBytes ?? 1 << 20;
    const startTurn = g.turn;
    for (;;) {
      if (opts.turns !== undefined) {
        const remaining = opts.turns - (g.turn - startTurn);
        if (remaining <= 0) break;
        if (remaining === 1 && crash) {
          g.turnEvents(crash);
          break;
        }
      } else if (g.approxBytes * SIZE_CALIBRATION >= target) {
        if (crash) g.turnEvents(crash);
        break;
      }
      g.turnEvents(null);
      yield* drain(g);
    }
    g.flush();
    const tail = g.inFlight;
    if (opts.tornTail && tail && tail.length > 0) {
      g.ready.push(tail);
      g.stats.inFlightEvents = tail.length;
      state.lastBatchTorn = true;
    } else if (opts.tornTail && !tail) {
      state.lastBatchTorn = true;
      const last = g.ready[g.ready.length - 1];
      if (last) g.stats.inFlightEvents = last.length;
    }
    if (tail && !(opts.tornTail && tail.length > 0)) g.stats.events -= tail.length;
    yield* drain(g);
    g.stats.approxBytes = g.approxBytes;
  };
  function* drain(g: Gen): Generator<SessionEvent[]> {
    while (g.ready.length > 0) {
      g.stats.batches++;
      yield g.ready.shift()!;
    }
  }
  return {
    header,
    [Symbol.iterator]: iterate,
    get lastBatchTorn() {
      return state.lastBatchTorn;
    },
    get stats() {
      if (!state.stats) throw new Error('stats are available after iteration');
      return state.stats;
    },
  };
}

/** Materialize a (small) generated session: header, batches and flat events. */
export function collectSession(opts: GenerateOptions): { header: SessionHeader; batches: SessionEvent[][]; events: SessionEvent[]; lastBatchTorn: boolean; stats: GenerateStats } {
  const s = generateSession(opts);
  const batches = [...s];
  return { header: s.header, batches, events: batches.flat(), lastBatchTorn: s.lastBatchTorn, stats: s.stats };
}

export interface GeneratedArtifactOptions extends GenerateOptions {
  encoding: Encoding;
  packChunks?: boolean;
  level?: number;
  encoder?: WriteOptions['encoder'];
}

export interface GeneratedArtifactInfo {
  header: SessionHeader;
  /** Total bytes written. */
  bytes: number;
  /** Plaintext (logical) bytes of all batches and the header. */
  logicalBytes: number;
  /** Events written (in-flight ones included). */
  events: number;
  /** Events that are durable (excludes the torn in-flight batch). */
  durableEvents: number;
  batches: number;
  /** When torn: byte offset where the torn final write begins. */
  tornAt: number | null;
  /** Bytes of the final write that were kept (the rest was cut off). */
  tornKept: number | null;
  stats: GenerateStats;
}

/** Cut an encoded final write in half, never exactly at a raw line boundary. */
export function tearBytes(bytes: Buffer): Buffer {
  if (bytes.length < 2) return bytes.subarray(0, 0);
  let cut = Math.floor(bytes.length / 2);
  if (bytes[cut - 1] === 0x0a) cut = Math.max(1, cut - 1);
  if (bytes[cut - 1] === 0x0a) cut = Math.min(bytes.length - 1, cut + 2);
  return bytes.subarray(0, cut);
}

async function emitGenerated(
  opts: GeneratedArtifactOptions,
  sink: { header(bytes: Buffer): Promise<void> | void; write(bytes: Buffer): Promise<void> | void },
): Promise<GeneratedArtifactInfo> {
  const session = generateSession(opts);
  const enc = new ArtifactEncoder({ header: session.header, encoding: opts.encoding, packChunks: opts.packChunks ?? true, level: opts.level ?? 3, ...(opts.encoder ? { encoder: opts.encoder } : {}) });
  const info: GeneratedArtifactInfo = { header: session.header, bytes: 0, logicalBytes: 0, events: 0, durableEvents: 0, batches: 0, tornAt: null, tornKept: null, stats: undefined as unknown as GenerateStats };
  const headerBytes = await enc.header();
  info.logicalBytes += Buffer.byteLength(JSON.stringify(session.header)) + 1;
  await sink.header(headerBytes);
  info.bytes += headerBytes.length;
  // One batch of lookahead: the final batch may have to be torn.
  let held: { bytes: Buffer; events: number } | undefined;
  for (const batch of session) {
    if (held) {
      await sink.write(held.bytes);
      info.bytes += held.bytes.length;
      info.durableEvents += held.events;
    }
    const bytes = await enc.batch(batch);
    info.logicalBytes += enc.lastPlaintextBytes;
    held = { bytes, events: batch.length };
    info.events += batch.length;
    info.batches++;
  }
  if (held) {
    if (session.lastBatchTorn) {
      const kept = tearBytes(held.bytes);
      info.tornAt = info.bytes;
      info.tornKept = kept.length;
      await sink.write(kept);
      info.bytes += kept.length;
    } else {
      await sink.write(held.bytes);
      info.bytes += held.bytes.length;
      info.durableEvents += held.events;
    }
  }
  info.stats = session.stats;
  return info;
}

/** Generate into memory (small sessions; tests). */
export async function generateArtifact(opts: GeneratedArtifactOptions): Promise<{ bytes: Buffer; info: GeneratedArtifactInfo }> {
  const parts: Buffer[] = [];
  const info = await emitGenerated(opts, { header: (b) => void parts.push(b), write: (b) => void parts.push(b) });
  return { bytes: Buffer.concat(parts), info };
}

/**
 * Stream a generated session to a NEW file, batch by batch (one frame per
 * batch in zstd mode), through a temp file; refuses to overwrite.
 */
export async function writeGeneratedArtifact(target: string, opts: GeneratedArtifactOptions): Promise<GeneratedArtifactInfo> {
  let writer: ArtifactFileWriter | undefined;
  // ArtifactFileWriter encodes the header itself; feed it the other writes verbatim.
  const info = await emitGenerated(opts, {
    header: async () => {
      writer = await ArtifactFileWriter.create(target, {
        header: generatedHeader(opts),
        encoding: opts.encoding,
        level: opts.level ?? 3,
        ...(opts.encoder ? { encoder: opts.encoder } : {}),
      });
    },
    write: (b) => writer!.appendBytes(b),
  }).catch(async (error) => {
    await writer?.abort();
    throw error;
  });
  await writer!.close();
  return info;
}
