// The first visit's JavaScript, measured on the built files: at most 200 KB gzipped (issue 17).
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { builtFile, firstLoadScripts } from './built-files.js';

const LIMIT_BYTES = 200 * 1024;

it('loads at most 200 KB of gzipped JavaScript on the first visit', () => {
  const scripts = firstLoadScripts();
  expect(scripts.length).toBeGreaterThan(0);
  const sizes = scripts.map((url) => ({ url, gzipped: gzipSync(builtFile(url), { level: 9 }).length }));
  const total = sizes.reduce((sum, { gzipped }) => sum + gzipped, 0);
  console.log(
    `console first-load JavaScript: ${(total / 1024).toFixed(1)} KB gzipped (${sizes.map(({ url, gzipped }) => `${url.split('/').pop()} ${(gzipped / 1024).toFixed(1)} KB`).join(', ')})`,
  );
  expect(total).toBeLessThanOrEqual(LIMIT_BYTES);
});
