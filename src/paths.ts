import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: the nearest folder above this module with a package.json (src/ and dist/ alike). */
function packageRoot(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(directory, 'package.json'))) {
    const parent = dirname(directory);
    if (parent === directory) throw new Error('package.json not found above the service code');
    directory = parent;
  }
  return directory;
}

/** Where the build writes the files served as installations. */
export function installationsDirectory(): string {
  return join(packageRoot(), 'dist', 'installations');
}

/** Where the console's build (console/, Vite) writes the files served at /console. */
export function consoleDirectory(): string {
  return join(packageRoot(), 'console', 'dist');
}

/** The version in package.json (what `devdata --version` prints). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
