import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DomainError } from '../../domain-errors.js';
import { API_VERSION } from '../../platform/api-version.js';
import { noneMatch } from '../../platform/etag.js';
import { openApiJson } from '../../platform/openapi.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, NoContent, ref, withHeaders } from '../../platform/schemas.js';
import type { InstallationsService } from './service.js';
import type { Capability } from '../system/capability.js';
import { sendNotModified } from '../../platform/http-contract.js';

const InstallationSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.String(),
    version: Type.String(),
    filename: Type.String(),
    size: Type.Integer(),
    sha256: Type.String(),
    downloadUrl: Type.String(),
  },
  { $id: 'Installation' },
);

export const installationSchemas = [InstallationSchema];

/** One `bytes=` range of a file of `size` bytes, or undefined when the header does not apply. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]));
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

const FILE_HEADERS = ['ETag', 'Accept-Ranges', 'Content-Disposition'] as const;
/** A file's bytes, sent as the stream the service opens. */
const FileBytes = Type.Unsafe<Readable>(Type.String({ format: 'binary' }));

export const installationRoutes: FastifyPluginAsyncTypebox<{ installations: InstallationsService }> = async (app, { installations }) => {
  const config = { auth: { scopes: ['integrations:read' as const] } };
  // The very document GET /openapi.json serves, so it names this server's base URL.
  installations.addRendered({
    id: 'openapi-document',
    name: 'OpenAPI document',
    description: 'The machine-readable description of this API (OpenAPI 3.1), for generating clients',
    version: API_VERSION,
    filename: `devdata-openapi-${API_VERSION}.json`,
    render: () => openApiJson(app),
  });

  app.get(
    '/api/v1/installations',
    {
      config,
      schema: {
        operationId: 'listInstallations',
        summary: 'Files to download',
        tags: ['installations'],
        response: { 200: Type.Object({ data: Type.Array(ref('Installation')) }) },
      },
    },
    async () => ({
      data: (await installations.list()).map((installation) => ({
        ...installation,
        downloadUrl: `/api/v1/installations/${installation.id}/download`,
      })),
    }),
  );

  app.get(
    '/api/v1/installations/:id/download',
    {
      config,
      schema: {
        operationId: 'downloadInstallation',
        summary: 'Download a file (Range requests supported)',
        tags: ['installations'],
        params: IdParams,
        headers: Type.Object({ range: Type.Optional(Type.String()), 'if-none-match': Type.Optional(Type.String()) }),
        // What the file's answers carry, once it is found: its version, that ranges work, its name.
        response: {
          200: withHeaders({ description: 'The file', content: { 'application/octet-stream': { schema: FileBytes } } }, ...FILE_HEADERS),
          206: withHeaders(
            { description: 'Part of the file', content: { 'application/octet-stream': { schema: FileBytes } } },
            ...FILE_HEADERS,
            'Content-Range',
          ),
          304: withHeaders(NoContent, ...FILE_HEADERS),
          416: withHeaders(errorResponse('range_not_satisfiable'), ...FILE_HEADERS, 'Content-Range'),
        },
      },
    },
    async (request, reply) => {
      const installation = await installations.get(request.params.id);
      const etag = `"${installation.sha256}"`;
      reply.header('etag', etag).header('accept-ranges', 'bytes').header('content-disposition', `attachment; filename="${installation.filename}"`);
      if (noneMatch(request.headers['if-none-match'], etag)) return sendNotModified(reply);
      const range = parseRange(request.headers.range, installation.size);
      if (range === 'unsatisfiable') {
        reply.header('content-range', `bytes */${installation.size}`);
        throw new DomainError('range_not_satisfiable', `The file has ${installation.size} bytes`);
      }
      // Served as bytes to save (Content-Disposition: attachment); a byte range of JSON is no JSON.
      reply.type('application/octet-stream');
      if (range) {
        return reply
          .code(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${installation.size}`)
          .header('content-length', String(range.end - range.start + 1))
          .send(installations.open(installation, range));
      }
      return reply.header('content-length', String(installation.size)).send(installations.open(installation));
    },
  );
};

export function installationsCapability(): Capability {
  return { feature: { name: 'installations', description: 'Downloadable files built from the repository (the OpenAPI document)', rangeRequests: true } };
}
