// Builds dist/ once before any test file runs: the end-to-end tests start the built CLI.
import { execFileSync } from 'node:child_process';
import { browserAvailable, missingBrowserNotice } from './support/browser.js';

export default function setup(): void {
  // TEST_BUILD=server builds the server alone, for a run of server tests while the client or the
  // console is half-changed in the same tree.
  if (process.env.TEST_BUILD === 'server') execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  else execFileSync('npm', ['run', 'build'], { stdio: 'inherit' });
  // Said once at the start, where it is seen, rather than only in the skipped tests' names.
  if (!browserAvailable()) process.stderr.write(`\n*** ${missingBrowserNotice()}\n\n`);
}
