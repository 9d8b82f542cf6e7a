// Preloaded with `node --require` by test/cold-memory.test.ts: at exit, the young generation's size
// and the largest ArrayBuffer total seen (MiB) are the last line on stderr.
const v8 = require('node:v8');
let ab = 0;
const t = setInterval(() => {
  ab = Math.max(ab, process.memoryUsage().arrayBuffers);
}, 5);
t.unref();
process.on('exit', () => {
  ab = Math.max(ab, process.memoryUsage().arrayBuffers);
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  process.stderr.write('\nprobe ' + JSON.stringify({ youngMiB: young.space_size / 1048576, arrayBuffersMiB: ab / 1048576 }) + '\n');
});
