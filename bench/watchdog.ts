// Preloaded (`node --import`) into every process the benchmark forks, the devdata server included:
// when the benchmark's IPC channel closes (the benchmark exited or was killed), the child exits too.
// It does nothing else, and does not keep the process alive by itself.
if (process.channel) {
  process.on('disconnect', () => process.exit(0));
  process.channel.unref();
}

export {};
