/**
 * Worker-thread entry of the parallel reader (`parallel.ts`): decodes one
 * group of complete zstd frames (or takes raw bytes as they are), decodes it
 * to text and finds its line ends, so the main thread only parses and folds;
 * in facts mode it also parses and checks each line (`facts.ts`), so the main
 * thread only folds. Answers `{id, plaintext, ...splitText(plaintext)}`,
 * `{id, plaintext, ends, facts}` or `{id, error}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createDecoder, type DecoderName } from '../physical/decoders.js';
import { splitText } from './parallel.js';
import { FactsWriter } from './facts.js';

const data = workerData as { decoder: DecoderName };
const decoder = createDecoder(data.decoder);

interface Task {
  id: number;
  zstd: boolean;
  input: Uint8Array;
  /** Facts mode: parse and check each line (lines longer than this are left to the main thread). */
  facts?: { maxLine: number };
}

/** Line ends and per-line facts (`facts.ts`) of a decoded group. */
function lineFacts(text: Buffer, maxLine: number) {
  const byteEnds: number[] = [];
  for (let nl = text.indexOf(0x0a); nl !== -1; nl = text.indexOf(0x0a, nl + 1)) byteEnds.push(nl + 1);
  const writer = new FactsWriter(byteEnds.length);
  let start = 0;
  for (let k = 0; k < byteEnds.length; k++) {
    const end = (byteEnds[k] as number) - 1;
    let line: string | undefined;
    if (end - start <= maxLine) {
      try {
        line = text.toString('utf8', start, end);
      } catch {
        // Past V8's string limit: the main thread finds it unparsable.
      }
    }
    writer.line(k, line);
    start = end + 1;
  }
  const facts = writer.done();
  return { ends: Float64Array.from(byteEnds), facts, transfer: [facts.rows.buffer, facts.pool.buffer] as ArrayBuffer[] };
}

parentPort?.on('message', (task: Task) => {
  void (async () => {
    let text: Buffer;
    try {
      const input = Buffer.from(task.input.buffer, task.input.byteOffset, task.input.byteLength);
      text = task.zstd ? await decoder.decode(input) : input;
    } catch (error) {
      // The main thread re-decodes the group frame by frame to name the failing frame.
      parentPort!.postMessage({ id: task.id, error: String((error as Error)?.message ?? error) });
      return;
    }
    let answer: Record<string, unknown>;
    let transfer: ArrayBuffer[];
    if (task.facts) {
      const f = lineFacts(text, task.facts.maxLine);
      answer = { ends: f.ends, facts: f.facts };
      transfer = [f.ends.buffer as ArrayBuffer, ...f.transfer];
    } else {
      const split = splitText(text);
      answer = split;
      transfer = [split.ends.buffer, split.charEnds.buffer, split.pieceLines.buffer] as ArrayBuffer[];
    }
    // The bytes go back too (the main thread keeps fragments and hashes the artifact view);
    // a buffer this thread does not own whole is copied so it can be transferred.
    const owned = text.byteOffset === 0 && text.byteLength === text.buffer.byteLength ? new Uint8Array(text.buffer) : new Uint8Array(text);
    try {
      parentPort!.postMessage({ id: task.id, plaintext: owned, ...answer }, [owned.buffer as ArrayBuffer, ...transfer]);
    } catch {
      // An externally owned buffer cannot be transferred: send a copy.
      const copy = new Uint8Array(owned);
      parentPort!.postMessage({ id: task.id, plaintext: copy, ...answer }, [copy.buffer, ...transfer]);
    }
  })();
});
