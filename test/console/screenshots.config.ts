// `npm run screenshots`: the console tour in Chromium, writing docs/console/*.png (not part of npm test).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/console/screenshots.tour.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 300_000,
    hookTimeout: 60_000,
  },
});
