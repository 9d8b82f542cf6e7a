/**
 * One input per `dsh check` rule that a full load reaches (shared by check.test.ts and rules.test.ts):
 * each mutation of the small valid log fires exactly its rule.
 */
import type { Finding } from '../../src/check/engine.js';
import { checkResolved } from '../../src/check/engine.js';
import type { RuleCode } from '../../src/core/rules.js';
import type { ResolvedTarget } from '../../src/log/target.js';
import { compressFrame } from '../../src/physical/encoder.js';
import { MemorySource } from '../../src/physical/source.js';
import { baseEvents, clone, headerLine, logText, sequence, toolResultData, toolTurn, type Ev, type Header } from './logtext.js';

export async function findingsOf(text: string | Buffer, name = 'session.jsonl'): Promise<Finding[]> {
  const target: ResolvedTarget = { path: name, rawPath: name, open: () => new MemorySource(name, Buffer.from(text)), layoutWarnings: [] };
  return (await checkResolved(target)).findings;
}

export function mutate(fn: (events: Ev[]) => void, extra: Ev[] = []): Ev[] {
  const events = clone([...baseEvents(), ...extra]);
  fn(events);
  return events;
}

export const at = (events: Ev[], i: number) => events[i] as any;

export async function zstdArtifact(parts: string[]): Promise<{ bytes: Buffer; frames: Buffer[] }> {
  const frames: Buffer[] = [];
  for (const p of parts) frames.push(await compressFrame(Buffer.from(p)));
  return { bytes: Buffer.concat(frames), frames };
}

export function lines(events: Ev[], header: Header = {}): string[] {
  return [headerLine(header) + '\n', ...sequence(events).map((e) => JSON.stringify(e) + '\n')];
}

export interface Mutation {
  rule: RuleCode;
  why: string;
  seq?: number;
  byteOffset?: number;
  build: () => string | Buffer | Promise<string | Buffer>;
  name?: string;
  message?: RegExp;
}

export const MUTATIONS: Mutation[] = [
  { rule: 'DSH-A1', why: 'empty artifact', build: () => '' },
  { rule: 'DSH-A1', why: 'header line is not JSON', build: () => '{"type":"session",\n' + logText(baseEvents()).split('\n').slice(1).join('\n'), message: /header line is not valid JSON/ },
  { rule: 'DSH-A2', why: 'foreign version (refused)', build: () => logText(baseEvents(), { version: 1 }), message: /^SessionFormatUnsupportedError: session "x" uses log format v1/ },
  { rule: 'DSH-A3', why: 'retired header field', build: () => logText(baseEvents(), { sandboxMode: 'x' }), message: /retired policy baseline fields/ },
  { rule: 'DSH-A3', why: 'header not a session header', build: () => logText(baseEvents(), { createdAt: -1 }), message: /first line is not a session header/ },
  {
    rule: 'DSH-A5',
    why: 'bytes after the frames are not a frame',
    name: 'session.jsonl.zstd',
    build: async () => {
      const l = lines(baseEvents());
      const { bytes } = await zstdArtifact([l[0]!, l.slice(1).join('')]);
      return Buffer.concat([bytes, Buffer.from('garbage!garbage!')]);
    },
    message: /invalid frame magic/,
  },
  {
    rule: 'DSH-A6',
    why: 'checksum of a middle frame is wrong',
    name: 'session.jsonl.zstd',
    build: async () => {
      const l = lines(baseEvents());
      const { frames } = await zstdArtifact([l[0]!, l.slice(1, 11).join(''), l.slice(11).join('')]);
      const middle = Buffer.from(frames[1]!);
      middle[middle.length - 1]! ^= 0xff;
      return Buffer.concat([frames[0]!, middle, frames[2]!]);
    },
    message: /frame at byte \d+ failed validation/,
  },
  {
    rule: 'DSH-A7',
    why: 'a complete frame ends inside a record',
    name: 'session.jsonl.zstd',
    build: async () => {
      const l = lines(baseEvents());
      const body = l.slice(1).join('');
      const { bytes } = await zstdArtifact([l[0]!, body + '{"type":"session/title"']);
      return bytes;
    },
  },
  {
    rule: 'DSH-A8',
    why: 'unparsable line before a later turn/end',
    build: () => {
      const l = lines(baseEvents());
      l[6] = '{not json\n';
      return l.join('');
    },
    message: /unparsable committed event at line 6/,
  },
  {
    rule: 'DSH-A9',
    why: 'seq gap before a later turn/end',
    build: () => logText(mutate((e) => (at(e, 5).seq = 6))),
    message: /seq gap in committed region at line 6 \(expected 5, got 6\)/,
  },
  {
    rule: 'DSH-A10',
    why: 'torn last line (no later turn/end)',
    build: () => {
      const text = logText([...baseEvents(), { type: 'session/title', data: { title: 'a title' } }]);
      return text.slice(0, text.length - 20);
    },
    message: /truncates the artifact to byte \d+/,
  },
  { rule: 'DSH-B1', why: 'legacy mode/set', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'mode/set', data: {} }])) },
  { rule: 'DSH-B2', why: 'turn/end reason with an extra key', seq: 19, build: () => logText(mutate((e) => (at(e, 19).data.reason.extra = 1))), message: /malformed pre-react-loop turn\/end at seq 19/ },
  { rule: 'DSH-B3', why: 'legacy turn/start with an empty trigger kind', seq: 0, build: () => logText(mutate((e) => (at(e, 0).data.trigger = { kind: '' }))) },
  { rule: 'DSH-B4', why: 'steering/message in neither legacy shape', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'steering/message', data: { turn: 2 } }])) },
  { rule: 'DSH-B5', why: 'user/message with role assistant', seq: 26, build: () => logText(mutate((e) => (at(e, 26).data.role = 'assistant'))), message: /session event at seq 26 message must have role "user"/ },
  { rule: 'DSH-B6', why: 'unknown type not ignorable (refused)', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'future/x', data: {} }])), message: /^SessionFormatUnsupportedError: session "x" contains event type "future\/x" \(seq 31\)/ },
  { rule: 'DSH-B7', why: 'unknown type marked ignorable', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'future/x', data: {}, ignorable: true }])) },
  { rule: 'DSH-C1', why: 'relative cwd in the header', build: () => logText(baseEvents(), { cwd: 'w' }), message: /session header cwd must be an absolute path/ },
  { rule: 'DSH-C2', why: 'unknown envelope key', seq: 4, build: () => logText(mutate((e) => (at(e, 4).extra = 1))), message: /seed event at index 4 has an invalid event envelope/ },
  { rule: 'DSH-C3', why: 'request/header without model', seq: 3, build: () => logText(mutate((e) => delete at(e, 3).data.header.config.model)), message: /seed request\/header at index 3 lacks provider\/model/ },
  { rule: 'DSH-S2', why: 'tool/call carries surfaceOp', seq: 11, build: () => logText(mutate((e) => (at(e, 11).surfaceOp = 'append'))) },
  { rule: 'DSH-S3', why: 'user/message without surfaceOp', seq: 26, build: () => logText(mutate((e) => delete at(e, 26).surfaceOp)) },
  { rule: 'DSH-S4', why: 'invalid surfaceOp', seq: 26, build: () => logText(mutate((e) => (at(e, 26).surfaceOp = 'bogus'))) },
  { rule: 'DSH-S5', why: 'replace start not on the surface', seq: 22, build: () => logText(mutate((e) => (at(e, 22).surfaceOp.start = 99))), message: /start seq 99 not found in surface/ },
  { rule: 'DSH-S6', why: 'sourceEventSeqs not an array', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = 5))) },
  { rule: 'DSH-S7', why: 'empty sourceEventSeqs on user/message', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = []))) },
  { rule: 'DSH-S8', why: 'negative source seq', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [-1]))) },
  { rule: 'DSH-S9', why: 'duplicate source seqs', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [2, 2]))) },
  { rule: 'DSH-S10', why: 'source seq not earlier', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [26]))), message: /sourceEventSeqs must reference earlier events: 26 >= current seq 26/ },
  // Out of ascending order (the provenance check's other path: a Set finds the duplicates).
  { rule: 'DSH-S9', why: 'duplicate source seqs out of order', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [12, 2, 12]))), message: /sourceEventSeqs must not contain duplicates/ },
  { rule: 'DSH-S10', why: 'source seq not earlier, out of order', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [27, 2]))), message: /sourceEventSeqs must reference earlier events: 27 >= current seq 26/ },
  { rule: 'DSH-S10B', why: 'checkpoint misses a shadowed node, sources out of order', seq: 22, build: () => logText(mutate((e) => (at(e, 22).sourceEventSeqs = [21, 20, 12, 2]))), message: /missing 10$/ },
  { rule: 'DSH-S10B', why: 'checkpoint misses a shadowed node', seq: 22, build: () => logText(mutate((e) => (at(e, 22).sourceEventSeqs = [20, 21, 2, 12]))), message: /missing 10$/ },
  {
    rule: 'DSH-S11',
    why: 'tool/result rewrite spanning two nodes',
    seq: 37,
    build: () => {
      const events = [...baseEvents(), ...toolTurn()];
      events.splice(37, 0, { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', '[pruned]'), surfaceOp: { op: 'replace', start: 34, end: 36 }, sourceEventSeqs: [34, 36] });
      return logText(events);
    },
  },
  {
    rule: 'DSH-S12',
    why: 'tool/result rewrite changing isError',
    seq: 37,
    build: () => {
      const events = [...baseEvents(), ...toolTurn()];
      const data = toolResultData(3, 1, 'c9', 't9', '[pruned]');
      (data.message.content[0] as any).isError = true;
      events.splice(37, 0, { type: 'tool/result', data, surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] });
      return logText(events);
    },
  },
  { rule: 'DSH-R2', why: "turn/start with null data (DSH's closer pass throws)", build: () => logText(mutate((e) => (at(e, 24).data = null))), message: /TypeError: Cannot read properties of null/ },
  { rule: 'DSH-E2', why: 'turn numbering skips', seq: 24, build: () => logText(mutate((e) => (at(e, 24).data.turn = 3))), message: /turn\/start expected turn 2, got 3$/ },
  { rule: 'DSH-E3', why: 'turn/end names another turn', seq: 19, build: () => logText(mutate((e) => (at(e, 19).data.turn = 5))), message: /turn\/end 5 does not match open turn 1$/ },
  { rule: 'DSH-E4', why: 'step numbering skips', seq: 15, build: () => logText(mutate((e) => (at(e, 15).data.step = 3))), message: /step\/start expected step 2 in turn 1, got 3$/ },
  { rule: 'DSH-E5', why: 'chunk names a step that is not open', seq: 8, build: () => logText(mutate((e) => (at(e, 8).data.step = 2))), message: /assistant\/chunk names turn 1\/step 2 but open is turn 1\/step 1$/ },
  { rule: 'DSH-E6', why: 'tool/result without its tool/call', seq: 12, build: () => logText(mutate((e) => (at(e, 11).data.callId = 'c2'))), message: /tool\/result for c1 with no prior tool\/call in this step$/ },
  {
    rule: 'DSH-E7',
    why: 'tool/result rewrite between turns',
    seq: 39,
    build: () => logText([...baseEvents(), ...toolTurn(), { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', '[pruned]'), surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] }]),
  },
  { rule: 'DSH-E8', why: 'request/context between turns', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'request/context', data: { provider: 'p', model: 'm' } }])), message: /request\/context appended outside any open turn/ },
  { rule: 'DSH-F1', why: 'shadowedRange disagrees with shadowedSeqs', seq: 21, build: () => logText(mutate((e) => (at(e, 21).data.shadowedRange.start = 3))), message: /compaction\/summary shadowedRange must match the first and last shadowedSeqs$/ },
  {
    rule: 'DSH-F1',
    why: 'successful compaction/end without a summary',
    seq: 23,
    build: () =>
      logText(
        mutate((e) => {
          e[21] = { type: 'session/title', data: { title: 't' } };
          e[22] = { type: 'session/title', data: { title: 't' } };
        }),
      ),
    message: /successful compaction\/end requires one compaction\/summary$/,
  },
  { rule: 'DSH-F2', why: 'retry counter skips', seq: 6, build: () => logText(mutate((e) => (at(e, 6).data.retry = 2))), message: /llm\/retry retry 2 must equal provider policy retry 1$/ },
  { rule: 'DSH-F2', why: 'retry-started without its retry', seq: 7, build: () => logText(mutate((e) => (at(e, 7).data.retryId = 'r2'))), message: /llm\/retry-started pairs no prior scheduled attempt$/ },
  {
    rule: 'DSH-F3',
    why: 'no request/header before the first dispatch',
    seq: 5,
    build: () =>
      logText(
        mutate((e) => {
          for (const i of [3, 6, 7]) e[i] = { type: 'request/context', data: { provider: 'p', model: 'm' } };
        }),
      ),
  },
  { rule: 'DSH-F4', why: 'compaction/start left open at the end', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'compaction/start', data: { compactionId: 'k2', turn: null } }])) },
  { rule: 'DSH-R1', why: 'last turn left open', seq: 30, build: () => logText(baseEvents().slice(0, 30)), message: /turn 2 is open at the end of the log; DSH would synthesize 1 closer\(s\): turn\/end seq 30/ },
];
