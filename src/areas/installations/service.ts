// Files a user can download: artifacts that the build produces from the repository (the
// OpenAPI document now; client packages later), listed in a manifest beside them.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { notFound } from '../../platform/errors.js';

export interface Installation {
  id: string;
  name: string;
  description: string;
  version: string;
  filename: string;
  size: number;
  sha256: string;
}

export const MANIFEST = 'manifest.json';

export class InstallationsService {
  private manifest: Promise<Installation[]> | undefined;

  constructor(private readonly directory: string) {}

  /** The manifest written by the build; no build output means no installations, not an error. */
  list(): Promise<Installation[]> {
    this.manifest ??= readFile(join(this.directory, MANIFEST), 'utf8').then(
      (text) => JSON.parse(text) as Installation[],
      () => [],
    );
    return this.manifest;
  }

  async get(id: string): Promise<Installation> {
    const installation = (await this.list()).find((candidate) => candidate.id === id);
    if (!installation) throw notFound('Installation');
    return installation;
  }

  open(installation: Installation, range?: { start: number; end: number }): Readable {
    return createReadStream(join(this.directory, installation.filename), range);
  }
}
