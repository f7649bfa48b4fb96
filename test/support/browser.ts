// The real browser of the end-to-end tests: Debian's Chromium driven by playwright-core. A plain
// machine may lack it; there its tests are skipped with a printed notice, while under CI=true
// (where .ci/run installs it) a missing browser fails them.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { describe } from 'vitest';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** What a run without the browser does about its tests, and how to get one. */
export function missingBrowserNotice(): string {
  const consequence = process.env.CI === 'true' ? 'the browser tests fail (CI=true requires them)' : 'the browser tests are skipped';
  return `Chromium not found at ${CHROMIUM_PATH}: ${consequence}. To run them, install Debian's Chromium (apt-get install chromium) or set CHROMIUM_PATH.`;
}

export function browserAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** `describe` for tests that need the browser: skipped without one, except under CI where that fails. */
export function describeInBrowser(name: string, tests: () => void): void {
  if (browserAvailable() || process.env.CI === 'true') describe(name, tests);
  else describe.skip(`${name} (skipped: no Chromium at ${CHROMIUM_PATH})`, tests);
}

/** A headless browser with a fresh profile, kept off the network: this machine reaches none. */
export function launchBrowser(): Promise<Browser> {
  if (!browserAvailable()) throw new Error(missingBrowserNotice());
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
