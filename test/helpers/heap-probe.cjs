// Preloaded with `node --require` by tests that bound a command's memory: at exit, the young
// generation's size, the largest ArrayBuffer total and the largest V8 heap in use seen (MiB) are
// the last line on stderr.
const v8 = require('node:v8');
let ab = 0;
let heap = 0;
const sample = () => {
  const m = process.memoryUsage();
  ab = Math.max(ab, m.arrayBuffers);
  heap = Math.max(heap, m.heapUsed);
};
const t = setInterval(sample, 5);
t.unref();
process.on('exit', () => {
  sample();
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  process.stderr.write('\nprobe ' + JSON.stringify({ youngMiB: young.space_size / 1048576, arrayBuffersMiB: ab / 1048576, heapUsedMiB: heap / 1048576 }) + '\n');
});
