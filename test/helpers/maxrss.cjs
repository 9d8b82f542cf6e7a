// Preloaded with `node --require` by tests that bound a command's memory: the
// process's peak RSS (KiB) is the last line on stderr.
process.on('exit', () => {
  process.stderr.write(`\nmaxrss-kib ${process.resourceUsage().maxRSS}\n`);
});
