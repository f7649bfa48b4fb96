import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Generous: the suite runs two files at once on two cores, and several tests wait on real timers.
    testTimeout: 60_000,
    // Hooks do real work rather than wait for a time: they start apps (compiling every route's
    // schemas: under a second alone, four times that beside two busy processes), servers and
    // PostgreSQL schemas. The bound only has to catch a hang, on a machine busy with other work too.
    hookTimeout: 180_000,
    reporters: ['default'],
  },
});
