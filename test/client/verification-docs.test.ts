// The receiver code of docs/webhook-verification.md, run as written (Python, Go, the shell with
// openssl) against deliveries signed the way the service signs them: a genuine one, one across a
// secret rotation, and altered, stale and wrongly keyed ones. A language whose tool is not
// installed is skipped, with a notice.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signWebhook } from '@devdata/client';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.js';

const document = readFileSync(join(ROOT, 'docs', 'webhook-verification.md'), 'utf8');
const directory = mkdtempSync(join(tmpdir(), 'devdata-verify-docs-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function snippet(language: string): string {
  const code = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(document)?.[1];
  if (!code) throw new Error(`no ${language} block in docs/webhook-verification.md`);
  return code;
}

function installed(command: string, args: string[]): boolean {
  const probe = spawnSync(command, args, { stdio: 'ignore' });
  if (probe.status === 0) return true;
  console.warn(`${command} is not installed: the ${command} example of docs/webhook-verification.md is not run`);
  return false;
}

const SECRET = 'whsec_docs_example_secret';
const body = JSON.stringify({
  id: 42,
  type: 'resource.updated',
  data: { resource: { name: 'Küche ✓' }, changed: ['state'] },
  createdAt: '2026-11-20T10:00:00.000Z',
});
const now = () => Math.floor(Date.now() / 1000);

/** Runs a verifier on (body, header, secret) and returns what it printed: `verified <id>` or `refused …`. */
type Verifier = (rawBody: string, header: string, secret: string) => string;

async function expectVerifierBehaves(verify: Verifier): Promise<void> {
  const timestamp = now();
  const header = await signWebhook(body, SECRET, timestamp);
  expect(verify(body, header, SECRET)).toBe('verified 42');
  // Rotation: a signature by another secret first, then the current one (one timestamp for both).
  const other = await signWebhook(body, 'whsec_previous', timestamp);
  expect(verify(body, `${other},${header.slice(header.indexOf('v1='))}`, SECRET)).toBe('verified 42');
  expect(verify(body.replace('Küche', 'Kuche'), header, SECRET)).toMatch(/^refused/);
  expect(verify(body, header, 'whsec_someone_else')).toMatch(/^refused/);
  expect(verify(body, await signWebhook(body, SECRET, timestamp - 600), SECRET)).toMatch(/^refused/);
  expect(verify(body, 'v1=00', SECRET)).toMatch(/^refused/);
}

describe('docs/webhook-verification.md', () => {
  it.runIf(installed('python3', ['--version']))('Python: verify_webhook', async () => {
    const file = join(directory, 'verify.py');
    writeFileSync(
      file,
      `${snippet('python')}
import sys
try:
    event = verify_webhook(open(sys.argv[1], "rb").read(), sys.argv[2], sys.argv[3])
    print("verified", event["id"])
except WebhookVerificationError as error:
    print("refused", error)
`,
    );
    await expectVerifierBehaves((rawBody, header, secret) => {
      writeFileSync(join(directory, 'body.json'), rawBody);
      return execFileSync('python3', [file, join(directory, 'body.json'), header, secret], { encoding: 'utf8' }).trim();
    });
  });

  it.runIf(installed('go', ['version']))(
    'Go: Verify',
    async () => {
      const verifier = join(directory, 'go');
      execFileSync('mkdir', ['-p', verifier]);
      writeFileSync(join(verifier, 'verify.go'), snippet('go').replace('package devdatawebhook', 'package main'));
      writeFileSync(
        join(verifier, 'main.go'),
        `package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	body, _ := os.ReadFile(os.Args[1])
	event, err := Verify(body, os.Args[2], os.Args[3], 5*time.Minute)
	if err != nil {
		fmt.Println("refused", err)
		return
	}
	fmt.Println("verified", event.ID)
}
`,
      );
      const env = { ...process.env, GOCACHE: join(directory, 'gocache'), GOPATH: join(directory, 'gopath'), GO111MODULE: 'off' };
      const binary = join(verifier, 'verify');
      execFileSync('go', ['build', '-o', binary, join(verifier, 'verify.go'), join(verifier, 'main.go')], { env, stdio: 'pipe' });
      await expectVerifierBehaves((rawBody, header, secret) => {
        writeFileSync(join(directory, 'body.json'), rawBody);
        return execFileSync(binary, [join(directory, 'body.json'), header, secret], { encoding: 'utf8' }).trim();
      });
    },
    120_000,
  );

  it.runIf(installed('openssl', ['version']))('shell: verify_devdata_webhook', async () => {
    const script = `${snippet('sh')}
if verify_devdata_webhook "$1" "$2" "$3" 2>/dev/null; then echo "verified $(sed -n 's/^{"id":\\([0-9]*\\).*/\\1/p' "$1")"; else echo refused; fi
`;
    await expectVerifierBehaves((rawBody, header, secret) => {
      writeFileSync(join(directory, 'body.json'), rawBody);
      return execFileSync('sh', ['-c', script, 'sh', join(directory, 'body.json'), header, secret], { encoding: 'utf8' }).trim();
    });
  });
});
