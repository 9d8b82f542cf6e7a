/**
 * Sessions made by the project's own generator with each behaviour pattern (dsh check's X rules) planted
 * in a known turn, beside a near-miss that must not fire. `plantedSession()` returns the events and where
 * each pattern sits; the seqs are looked up from the generated events, never hard-coded.
 */
import { collectSession, type ScriptedCall, type ScriptedStep, type SessionScript } from '../../tools/generate.js';
import type { SessionEvent, SessionHeader } from '../../src/log/types.js';

const lines = (n: number, tag: string): string => Array.from({ length: n }, (_, i) => `${i + 1}\t${tag} line ${i} of the planted output`).join('\n') + '\n';

/** 20 KB: carried through many dispatches (X6). */
export const BIG = lines(560, 'big grep');
/** 30 KB: pruned two dispatches later (the X6 near-miss). */
export const BIG_PRUNED = lines(820, 'pruned read');
const A = lines(40, 'file a');
const B = lines(30, 'file b');

const call = (name: string, args: Record<string, unknown>, output: string, isError = false): ScriptedCall => ({ name, args, output, ...(isError ? { isError } : {}) });
const step = (calls: ScriptedCall[]): ScriptedStep => ({ text: 'working on it', calls });
const done: ScriptedStep = { text: 'done' };

export const PLANTED_SCRIPT: SessionScript = {
  turns: {
    // X1: list_dir with the same arguments (keys in another order) three times; grep with other arguments each time (near-miss).
    1: {
      user: 'look around',
      steps: [
        step([call('list_dir', { path: 'src', depth: '1' }, 'a.ts\nb.ts\n'), call('grep', { pattern: 'foo', path: 'src' }, BIG)]),
        step([call('list_dir', { depth: '1', path: 'src' }, 'a.ts\nb.ts\nc.ts\n'), call('grep', { pattern: 'bar', path: 'src' }, 'no match\n')]),
        step([call('list_dir', { path: 'src', depth: '1' }, 'a.ts\nb.ts\nc.ts\nd.ts\n'), call('grep', { pattern: 'baz', path: 'src' }, 'no match\n')]),
        done,
      ],
    },
    // X2: a.ts read twice with nothing between (fires); b.ts read twice with an edit of c.ts between (near-miss).
    2: {
      user: 'read the files',
      steps: [
        step([call('read_file', { path: 'src/a.ts' }, A)]),
        step([call('read_file', { path: 'src/a.ts' }, A)]),
        step([call('edit_file', { path: 'src/b.ts', old: 'x', new: 'y' }, 'ok\n'), call('read_file', { path: 'src/b.ts' }, B)]),
        step([call('edit_file', { path: 'src/c.ts', old: 'x', new: 'y' }, 'ok\n'), call('read_file', { path: 'src/b.ts' }, B)]),
        done,
      ],
    },
    // X3: three errors in a row; X4: npm run build fails again after a success between.
    3: {
      user: 'build it',
      steps: [
        step([call('bash', { command: 'npm run build' }, 'error TS2304\n', true), call('bash', { command: 'npx tsc' }, 'error TS2304\n', true), call('grep', { pattern: 'TS2304', path: 'src' }, 'rg: bad flag\n', true)]),
        step([call('read_file', { path: 'tsconfig.json' }, '{}\n'), call('bash', { command: 'npm run build' }, 'error TS2304 again\n', true)]),
        done,
      ],
    },
    // Near-miss of X3 and X4: errors interleaved with successes, every call different.
    4: {
      user: 'try again',
      steps: [
        step([call('bash', { command: 'npm test -- a' }, 'FAIL\n', true), call('bash', { command: 'npm test -- b' }, 'ok\n'), call('bash', { command: 'npm test -- c' }, 'FAIL\n', true)]),
        step([call('bash', { command: 'npm test -- d' }, 'ok\n'), call('bash', { command: 'npm test -- e' }, 'FAIL\n', true)]),
        done,
      ],
    },
    // X5: three llm/retry events in one turn; turn 6 has one (near-miss).
    5: { user: 'go on', retries: 3, steps: [done] },
    // The X6 near-miss: a 30 KB read pruned at the start of turn 7.
    6: { user: 'read the big file', steps: [step([call('read_file', { path: 'docs/big.md' }, BIG_PRUNED)]), done] },
    7: { user: 'carry on', steps: [done] },
    // X7: compactions at turns 8 and 9 (one step between); turn 11's (two steps after turn 9's) is the near-miss.
    8: { user: 'compact please', steps: [done], compactionSummary: 'Summary: the agent listed src, read a.ts and b.ts, and fixed the build.' },
    // X8: a summary larger than what it replaces frees nothing.
    9: { user: 'again', steps: [done], compactionSummary: `Summary: ${'everything that happened, restated at length. '.repeat(120)}` },
    // X10, X11: mutated below (a tool the header does not offer; arguments that are not JSON).
    10: { user: 'last bits', steps: [step([call('list_dir', { path: 'docs' }, 'big.md\n')]), step([call('read_file', { path: 'README.md' }, '# readme\n')]), done] },
    11: { user: 'wrap up', steps: [done], compactionSummary: 'Summary: short.' },
  },
};

export interface Planted {
  header: SessionHeader;
  events: SessionEvent[];
  batches: SessionEvent[][];
  /** The seqs a test expects findings at (looked up from the events). */
  at: {
    loopCalls: number[];
    redundant: { earlier: number; call: number; result: number };
    streak: number[];
    repeatedFailure: number[];
    retries: number[];
    big: { call: number; result: number };
    compactionStarts: number[];
    lowYield: number;
    unoffered: number;
    invalidArgs: number;
  };
}

const toolCalls = (events: SessionEvent[], turn: number): SessionEvent[] => events.filter((e) => e.type === 'tool/call' && e.data.turn === turn);
const resultOf = (events: SessionEvent[], callId: string): SessionEvent => events.find((e) => e.type === 'tool/result' && e.data.message.source.callId === callId)!;

export function plantedSession(id = 'behaviour-planted'): Planted {
  const { header, batches, events } = collectSession({
    seed: 50,
    id,
    turns: 11,
    randomFeatures: false,
    features: { 5: ['retry'], 6: ['retry'], 7: ['prune'], 8: ['compaction'], 9: ['compaction'], 11: ['compaction'] },
    script: PLANTED_SCRIPT,
  });
  // X10 and X11: what the model asked for in turn 10 (its assistant/message tool-call blocks).
  const asked = events.filter((e) => e.type === 'assistant/message' && e.data.turn === 10 && e.data.message.content.some((b: any) => b.type === 'tool-call'));
  const [unoffered, invalid] = asked;
  unoffered!.data.message.content.find((b: any) => b.type === 'tool-call').name = 'delete_repo';
  invalid!.data.message.content.find((b: any) => b.type === 'tool-call').arguments = '{"path": "README.md"';

  const t1 = toolCalls(events, 1).filter((e) => e.data.name === 'list_dir');
  const t2 = toolCalls(events, 2).filter((e) => e.data.name === 'read_file');
  const t3 = toolCalls(events, 3);
  const grepFoo = toolCalls(events, 1).find((e) => e.data.name === 'grep')!;
  const starts = events.filter((e) => e.type === 'compaction/start').map((e) => e.seq);
  const compactionMessages = events.filter((e) => e.type === 'user/message' && e.data.source?.kind === 'plugin');
  return {
    header,
    events,
    batches,
    at: {
      loopCalls: t1.map((e) => e.seq),
      redundant: { earlier: resultOf(events, t2[0]!.data.callId).seq, call: t2[1]!.seq, result: resultOf(events, t2[1]!.data.callId).seq },
      streak: t3.slice(0, 3).map((e) => resultOf(events, e.data.callId).seq),
      repeatedFailure: [t3[0]!, t3[4]!].map((e) => resultOf(events, e.data.callId).seq),
      retries: events.filter((e) => e.type === 'llm/retry' && e.data.turn === 5).map((e) => e.seq),
      big: { call: grepFoo.seq, result: resultOf(events, grepFoo.data.callId).seq },
      compactionStarts: starts,
      lowYield: compactionMessages[1]!.seq,
      unoffered: unoffered!.seq,
      invalidArgs: invalid!.seq,
    },
  };
}

/** A session that crashed mid-tool in its last turn, after the first of `names` started (X9 fires unless that tool only reads). */
export function crashedSession(id: string, names: [string, string]): { header: SessionHeader; batches: SessionEvent[][]; events: SessionEvent[] } {
  return collectSession({
    seed: 51,
    id,
    turns: 2,
    randomFeatures: false,
    crash: 'mid-tool',
    script: {
      turns: {
        1: { user: 'hello', steps: [done] },
        2: { user: 'change it', steps: [step([call(names[0], { path: 'src/a.ts', old: 'a', new: 'b' }, 'ok\n'), call(names[1], { path: 'src/b.ts' }, 'b\n')])] },
      },
    },
  });
}
