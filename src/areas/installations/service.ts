// Files a user can download: documents the running server renders (the OpenAPI document, for
// its own base URL) and files a build writes into a directory, listed in a manifest beside them.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { notFound } from '../../domain-errors.js';

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

/** An installation the server renders itself; `render` is called for every request, so it should cache. */
export interface RenderedInstallation extends Omit<Installation, 'size' | 'sha256'> {
  render: () => string;
}

export class InstallationsService {
  private manifest: Promise<Installation[]> | undefined;
  private readonly rendered = new Map<string, RenderedInstallation>();
  /** The bytes and digest of the latest rendering of each rendered installation. */
  private readonly renderings = new Map<string, { text: string; bytes: Buffer; sha256: string }>();

  constructor(private readonly directory: string) {}

  /** Offers a document the server makes (listed before the built files). */
  addRendered(installation: RenderedInstallation): void {
    this.rendered.set(installation.id, installation);
  }

  /** The rendered installations, then the built files' manifest (no build output: no files, not an error). */
  async list(): Promise<Installation[]> {
    this.manifest ??= readFile(join(this.directory, MANIFEST), 'utf8').then(
      (text) => JSON.parse(text) as Installation[],
      () => [],
    );
    const rendered = [...this.rendered.values()].map(({ render: _render, ...installation }) => {
      const { bytes, sha256 } = this.rendering(installation.id);
      return { ...installation, size: bytes.length, sha256 };
    });
    return [...rendered, ...(await this.manifest).filter((built) => !this.rendered.has(built.id))];
  }

  async get(id: string): Promise<Installation> {
    const installation = (await this.list()).find((candidate) => candidate.id === id);
    if (!installation) throw notFound('Installation');
    return installation;
  }

  open(installation: Installation, range?: { start: number; end: number }): Readable {
    if (this.rendered.has(installation.id)) {
      const { bytes } = this.rendering(installation.id);
      return Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes]);
    }
    return createReadStream(join(this.directory, installation.filename), range);
  }

  private rendering(id: string): { bytes: Buffer; sha256: string } {
    const text = (this.rendered.get(id) as RenderedInstallation).render();
    let rendering = this.renderings.get(id);
    if (rendering?.text !== text) {
      const bytes = Buffer.from(text);
      rendering = { text, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
      this.renderings.set(id, rendering);
    }
    return rendering;
  }
}
