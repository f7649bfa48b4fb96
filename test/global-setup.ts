// Builds dist/ once before any test file runs: the end-to-end tests start the built CLI.
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync('npm', ['run', 'build'], { stdio: 'inherit' });
}
