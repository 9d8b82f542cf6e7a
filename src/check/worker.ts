/** Worker-thread entry for `dsh check` over many artifacts: checks one path per message. */
import { parentPort, workerData } from 'node:worker_threads';
import { resolveTarget } from '../log/target.js';
import { createDecoder, type DecoderName } from '../physical/decoders.js';
import { checkResolved, rootLookup } from './engine.js';
import type { SecretsOptions } from '../views/secrets.js';
import type { BehaviourSettings } from './behaviour.js';

const data = workerData as { decoder?: DecoderName | 'auto'; secrets?: SecretsOptions; behaviour?: BehaviourSettings } | undefined;
const decoder = createDecoder(data?.decoder ?? 'auto');
const lookup = rootLookup();

parentPort?.on('message', (msg: { id: number; task: { path: string; root?: string } }) => {
  void (async () => {
    try {
      const target = resolveTarget(msg.task.path);
      if (msg.task.root !== undefined) target.root = msg.task.root;
      const result = await checkResolved(target, { decoder, lookup, ...(data?.secrets ? { secrets: data.secrets } : {}), ...(data?.behaviour ? { behaviour: data.behaviour } : {}) });
      parentPort!.postMessage({ id: msg.id, result });
    } catch (error) {
      parentPort!.postMessage({ id: msg.id, error: String((error as Error)?.message ?? error) });
    }
  })();
});
