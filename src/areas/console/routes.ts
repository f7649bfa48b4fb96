// The developer console (console/, built by Vite into console/dist) served at /console by the
// service itself: one process, no second server. The page is a client of the public API like any
// other; these routes only hand out its files. Hashed assets are cached for good, the page never,
// and the page may load nothing but its own files (docs/decisions.md, "Console").
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../../domain-errors.js';

export const CONSOLE_PATH = '/console';

/** Only the page's own origin, no inline script or style, never framed. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

interface ConsoleFile {
  body: Buffer;
  contentType: string;
  compressible: boolean;
  /** Compressed copies, made on first request for each encoding and kept. */
  encoded: Map<'br' | 'gzip', Buffer>;
}

interface ConsoleBuild {
  page: ConsoleFile;
  /** Files by their path under /console/, e.g. `assets/index-3f9a1c.js`. */
  files: Map<string, ConsoleFile>;
}

function readBuild(directory: string): ConsoleBuild | undefined {
  const files = new Map<string, ConsoleFile>();
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const extension = extname(name);
        files.set(relative(directory, path).split(sep).join('/'), {
          body: readFileSync(path),
          contentType: CONTENT_TYPES[extension] ?? 'application/octet-stream',
          compressible: COMPRESSIBLE.has(extension),
          encoded: new Map(),
        });
      }
    }
  };
  try {
    walk(directory);
  } catch {
    return undefined;
  }
  const page = files.get('index.html');
  if (!page) return undefined;
  files.delete('index.html');
  return { page, files };
}

/** The encoding the client accepts that we use (brotli, then gzip), if any. */
function chooseEncoding(request: FastifyRequest): 'br' | 'gzip' | undefined {
  const accepted = request.headers['accept-encoding'] ?? '';
  const offers = new Map(
    accepted
      .split(',')
      .map((part) => part.trim().split(';'))
      .map(([name, ...parameters]) => [name?.trim().toLowerCase() ?? '', !parameters.some((parameter) => /^\s*q=0(\.0*)?\s*$/.test(parameter))] as const),
  );
  if (offers.get('br')) return 'br';
  if (offers.get('gzip')) return 'gzip';
  return undefined;
}

function send(request: FastifyRequest, reply: FastifyReply, file: ConsoleFile): FastifyReply {
  reply.header('content-type', file.contentType);
  reply.header('cross-origin-resource-policy', 'same-origin');
  if (!file.compressible || file.body.length < 1024) return reply.send(file.body);
  // Vary must keep the Origin that the request hook set.
  reply.header('vary', 'Origin, Accept-Encoding');
  const encoding = chooseEncoding(request);
  if (!encoding) return reply.send(file.body);
  let encoded = file.encoded.get(encoding);
  if (!encoded) {
    encoded = encoding === 'br' ? brotliCompressSync(file.body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 9 } }) : gzipSync(file.body, { level: 9 });
    file.encoded.set(encoding, encoded);
  }
  return reply.header('content-encoding', encoding).send(encoded);
}

function sendPage(request: FastifyRequest, reply: FastifyReply, build: ConsoleBuild): FastifyReply {
  reply
    .header('cache-control', 'no-store')
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=(), usb=()');
  return send(request, reply, build.page);
}

/** What an installation without a built console answers, instead of a blank page. */
function sendNotBuilt(reply: FastifyReply): FastifyReply {
  return reply
    .code(503)
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
    .type('text/plain; charset=utf-8')
    .send('The console is not built in this installation: run `npm run build` (npm ci does it) and restart the server.\n');
}

export async function consoleRoutes(app: FastifyInstance, options: { directory: string }): Promise<void> {
  // Read once, at the first request: a server that never serves the console never reads it.
  let build: ConsoleBuild | undefined | null = null;
  const loaded = () => {
    if (build === null) build = readBuild(options.directory);
    return build;
  };
  // Static files from memory: public, and never counted against an API allowance.
  const route = { config: { auth: 'unmetered' as const }, schema: { hide: true } };

  app.get(CONSOLE_PATH, route, async (request, reply) => {
    const current = loaded();
    return current ? sendPage(request, reply, current) : sendNotBuilt(reply);
  });

  app.get<{ Params: { '*': string } }>(`${CONSOLE_PATH}/*`, route, async (request, reply) => {
    const current = loaded();
    if (!current) return sendNotBuilt(reply);
    const path = request.params['*'];
    const file = current.files.get(path);
    if (file) {
      // Vite names every file under assets/ by its content's hash.
      reply.header('cache-control', path.startsWith('assets/') ? IMMUTABLE : 'no-cache');
      return send(request, reply, file);
    }
    // A missing file is a 404 (never the page under a script's name); any other path is one of the
    // console's own pages, which the page routes itself.
    if (path.startsWith('assets/') || extname(path) !== '') throw notFound('Console file');
    return sendPage(request, reply, current);
  });
}
