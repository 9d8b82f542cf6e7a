/**
 * Worker-thread entry of the parallel reader (`parallel.ts`): decodes one
 * group of complete zstd frames (or takes raw bytes as they are), decodes it
 * to text and finds its line ends, so the main thread only parses and folds.
 * Answers `{id, plaintext, ...splitText(plaintext)}` or `{id, error}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createDecoder, type DecoderName } from '../physical/decoders.js';
import { splitText } from './parallel.js';

const data = workerData as { decoder: DecoderName };
const decoder = createDecoder(data.decoder);

interface Task {
  id: number;
  zstd: boolean;
  input: Uint8Array;
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
    const split = splitText(text);
    const transfer = [split.ends.buffer, split.charEnds.buffer, split.pieceLines.buffer] as ArrayBuffer[];
    // The bytes go back too (the main thread keeps fragments and hashes the artifact view);
    // a buffer this thread does not own whole is copied so it can be transferred.
    const owned = text.byteOffset === 0 && text.byteLength === text.buffer.byteLength ? new Uint8Array(text.buffer) : new Uint8Array(text);
    try {
      parentPort!.postMessage({ id: task.id, plaintext: owned, ...split }, [owned.buffer as ArrayBuffer, ...transfer]);
    } catch {
      // An externally owned buffer cannot be transferred: send a copy.
      const copy = new Uint8Array(owned);
      parentPort!.postMessage({ id: task.id, plaintext: copy, ...split }, [copy.buffer, ...transfer]);
    }
  })();
});
