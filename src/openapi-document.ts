// Prints the service's OpenAPI document as served for a base URL, without a database or a port:
// the linters read it, and the client package is generated from a copy that `--check` compares.
//   node dist/openapi-document.js [--base-url URL] [--out FILE] [--check FILE]
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';

/** The base URL the client package's copy of the document is made for: the server's default address. */
export const CANONICAL_BASE_URL = 'http://localhost:8080';

/** The document exactly as `GET /openapi.json` answers it for this base URL (pretty-printed). */
export async function renderOpenApiDocument(baseUrl: string): Promise<string> {
  const app = await buildApp(loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', BASE_URL: baseUrl }), { logger: false });
  try {
    await app.ready();
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'base-url': { type: 'string' }, out: { type: 'string' }, check: { type: 'string' } } });
  const document = await renderOpenApiDocument(values['base-url'] ?? CANONICAL_BASE_URL);
  if (values.check !== undefined) {
    const copy = await readFile(values.check, 'utf8').catch(() => '');
    if (copy !== document) {
      process.stderr.write(`${values.check} differs from the server's /openapi.json: run \`npm run openapi:client\` and commit the result\n`);
      process.exitCode = 1;
    }
    return;
  }
  if (values.out !== undefined) await writeFile(values.out, document);
  else process.stdout.write(document);
}

// Run as a script, not when a test imports the renderer.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
