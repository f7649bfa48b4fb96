// package.json's engines say exactly which Node.js versions devdata supports: every installed
// package must admit the lowest version of each supported line, or installing there warns (as
// cookie@2 did on Node 20). A dependency update that drops a line fails here, and the choice
// (hold the package back, or drop the line: docs/decisions.md, "Node.js versions") is made then.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import SQLite, { NAPI_FROM_MAJOR, sqlitePackage } from '../../src/storage/sqlite-driver.js';
import { ROOT } from '../support/processes.js';

// better-sqlite3 13, installed as the optional dependency better-sqlite3-napi: npm skips it without a
// word where its engines refuse (Node.js 20), and src/storage/sqlite-driver.ts loads it from 22 on.
const NAPI = 'node_modules/better-sqlite3-napi';

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
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; optionalDependencies?: Record<string, string> };
  const engines = manifest.engines.node;
  const lowest = engines.split('||').map((range) => semver.minVersion(range.trim())!.version);

  it('engines names the supported LTS lines: 20 from 20.19, 22 from 22.12, and 24', () => {
    expect(lowest).toEqual(['20.19.0', '22.12.0', '24.0.0']);
    for (const version of ['24.21.0', '22.23.3', '20.20.2']) expect(semver.satisfies(version, engines), version).toBe(true);
    for (const version of ['18.20.0', '21.7.0', '23.11.0', '25.0.0']) expect(semver.satisfies(version, engines), version).toBe(false);
  });

  it('the Node.js running the tests is one of them', () => {
    expect(semver.satisfies(process.versions.node, engines), `Node.js ${process.versions.node} is not in ${engines}`).toBe(true);
  });

  it('every installed package admits the lowest version of each line (better-sqlite3 13 those it is loaded on)', () => {
    const packages = installedPackages();
    expect(packages.length).toBeGreaterThan(100);
    const lines = (pkg: { name: string }): string[] => (pkg.name === NAPI ? lowest.filter((version) => semver.major(version) >= NAPI_FROM_MAJOR) : lowest);
    const refusing = packages.flatMap((pkg) =>
      lines(pkg)
        .filter((version) => !semver.satisfies(version, pkg.engines))
        .map((version) => `${pkg.name}@${pkg.version} (engines ${pkg.engines}) refuses ${version}`),
    );
    expect(refusing).toEqual([]);
  });

  it('SQLite is better-sqlite3 12 on Node.js 20 and 13 from 22 on, which npm installs only there', () => {
    // Optional, so that npm skips it on Node.js 20 (where it crashes) instead of warning.
    expect(manifest.optionalDependencies?.['better-sqlite3-napi']).toMatch(/^npm:better-sqlite3@\^13\./);
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string; optional?: boolean; engines?: { node?: string } }>;
    };
    const locked = lock.packages[NAPI]!;
    expect(locked.optional).toBe(true);
    expect(lowest.filter((version) => semver.satisfies(version, locked.engines!.node!))).toEqual(
      lowest.filter((version) => semver.major(version) >= NAPI_FROM_MAJOR),
    );

    const major = Number(process.versions.node.split('.')[0]);
    expect(sqlitePackage).toBe(major >= NAPI_FROM_MAJOR ? 'better-sqlite3-napi' : 'better-sqlite3');
    const loaded = createRequire(join(ROOT, 'package.json'))(`${sqlitePackage}/package.json`) as { version: string };
    expect(semver.major(loaded.version)).toBe(major >= NAPI_FROM_MAJOR ? 13 : 12);
    const db = new SQLite(':memory:');
    try {
      expect(db.prepare('select 1 + 1 as two').get()).toEqual({ two: 2 });
    } finally {
      db.close();
    }
  });
});
