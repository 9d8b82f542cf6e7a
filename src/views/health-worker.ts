/** Worker-thread entry for `dsh ls` health over a root: one session per message. */
import { parentPort, workerData } from 'node:worker_threads';
import { createDecoder, type DecoderName } from '../physical/decoders.js';
import { sessionHealth, type HealthTask } from './listing.js';

const decoder = createDecoder((workerData as { decoder?: DecoderName | 'auto' } | undefined)?.decoder ?? 'auto');

parentPort?.on('message', (msg: { id: number; task: HealthTask }) => {
  void (async () => {
    try {
      parentPort!.postMessage({ id: msg.id, result: await sessionHealth(msg.task, decoder) });
    } catch (error) {
      parentPort!.postMessage({ id: msg.id, error: String((error as Error)?.message ?? error) });
    }
  })();
});
