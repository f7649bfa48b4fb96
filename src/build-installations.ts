// Run by `npm run build` after compiling: writes the installation files (the OpenAPI document of
// this very build) and their manifest into dist/installations.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { API_VERSION } from './platform/openapi.js';
import { MANIFEST, type Installation } from './areas/installations/service.js';
import { installationsDirectory } from './paths.js';

async function main(): Promise<void> {
  const app = await buildApp(loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', BASE_URL: 'https://devdata.example' }));
  await app.ready();
  const document = `${JSON.stringify(app.swagger(), null, 2)}\n`;
  await app.close();

  const directory = installationsDirectory();
  await mkdir(directory, { recursive: true });
  const filename = `devdata-openapi-${API_VERSION}.json`;
  await writeFile(join(directory, filename), document);
  const manifest: Installation[] = [
    {
      id: 'openapi-document',
      name: 'OpenAPI document',
      description: 'The machine-readable description of this API (OpenAPI 3.1), for generating clients',
      version: API_VERSION,
      filename,
      size: Buffer.byteLength(document),
      sha256: createHash('sha256').update(document).digest('hex'),
    },
  ];
  await writeFile(join(directory, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
}

await main();
