// package.json's engines say exactly which Node.js versions devdata supports: every installed
// package must admit the lowest version of each supported line, or installing there warns (as
// cookie@2 did on Node 20). A dependency update that drops a line fails here, and the choice
// (hold the package back, or drop the line: docs/decisions.md, "Node.js versions") is made then.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.js';

function installedPackages(): Array<{ name: string; version: string; engines: string }> {
  const found: Array<{ name: string; version: string; engines: string }> = [];
  const walk = (directory: string): void => {
    if (!existsSync(directory)) return;
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const path = join(directory, entry.name);
      if (entry.name.startsWith('@')) {
        walk(path);
        continue;
      }
      const manifest = join(path, 'package.json');
      if (existsSync(manifest)) {
        const json = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string; engines?: { node?: string } };
        if (json.engines?.node) found.push({ name: relative(ROOT, path), version: json.version ?? '?', engines: json.engines.node });
      }
      walk(join(path, 'node_modules'));
    }
  };
  for (const root of ['node_modules', 'client/node_modules', 'console/node_modules']) walk(join(ROOT, root));
  return found;
}

describe('Node.js versions', () => {
  const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
  const lowest = engines.split('||').map((range) => semver.minVersion(range.trim())!.version);

  it('engines names the supported LTS lines: 20 from 20.19, 22 from 22.12 (24 waits for better-sqlite3 13)', () => {
    expect(lowest).toEqual(['20.19.0', '22.12.0']);
    expect(semver.satisfies('21.7.0', engines)).toBe(false);
    // better-sqlite3 12 aborts the process on Node.js 24.19 and later (docs/decisions.md, "Node.js versions").
    expect(semver.satisfies('24.19.0', engines)).toBe(false);
  });

  it('the Node.js running the tests is one of them', () => {
    expect(semver.satisfies(process.versions.node, engines), `Node.js ${process.versions.node} is not in ${engines}`).toBe(true);
  });

  it('every installed package admits the lowest version of each line', () => {
    const packages = installedPackages();
    expect(packages.length).toBeGreaterThan(100);
    const refusing = packages.flatMap((pkg) =>
      lowest.filter((version) => !semver.satisfies(version, pkg.engines)).map((version) => `${pkg.name}@${pkg.version} (engines ${pkg.engines}) refuses ${version}`),
    );
    expect(refusing).toEqual([]);
  });
});
