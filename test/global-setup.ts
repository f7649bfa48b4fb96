// Builds dist/ once before any test file runs: the end-to-end tests start the built CLI.
import { execFileSync } from 'node:child_process';
import { browserAvailable, missingBrowserNotice } from './support/browser.js';

export default function setup(): void {
  execFileSync('npm', ['run', 'build'], { stdio: 'inherit' });
  // Said once at the start, where it is seen, rather than only in the skipped tests' names.
  if (!browserAvailable()) process.stderr.write(`\n*** ${missingBrowserNotice()}\n\n`);
}
