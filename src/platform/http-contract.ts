// The parts of the HTTP contract every route shares (docs/decisions.md, "HTTP contract"): request ids, the error body,
// 404s, body parsing and content types.
import type { Duplex } from 'node:stream';
import { parse as parseQueryString } from 'node:querystring';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { newRequestId } from './request-id.js';
import { recordRouteMethods, type RouteMethods } from './allowed-methods.js';
import { DomainError, type ErrorDetail } from '../domain-errors.js';
import { codeForStatus, errorHeaders, STATUS_BY_CODE } from './errors.js';
import {
  MAX_ERROR_DETAILS,
  MAX_ERROR_DETAIL_STRING_LENGTH,
  MAX_ERROR_MESSAGE_LENGTH,
  MAX_JSON_DEPTH,
  MAX_PATH_PARAMETER_LENGTH,
  NUL_MESSAGE,
  jsonTextProblem,
  nulPath,
  truncated,
  urlEncodedNul,
} from './request-limits.js';
import { noteBodyLength } from './validation.js';
import { noteRawBody } from './idempotency.js';
import { PART_NAMES, validationDetails } from './validation-messages.js';

export interface ErrorResponse {
  status: number;
  code: string;
  message: string;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
}

/** The error response for anything thrown: a DomainError by its code, Fastify's own by its status, anything else a 500. */
export function describeError(error: FastifyError | DomainError | Error): ErrorResponse {
  if (error instanceof DomainError) {
    return { status: STATUS_BY_CODE[error.code], code: error.code, message: error.message, details: error.details, headers: errorHeaders(error) };
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const part = PART_NAMES[fastifyError.validationContext ?? ''] ?? 'request';
    const details = validationDetails(fastifyError.validation).slice(0, MAX_ERROR_DETAILS).map(boundedDetail);
    return {
      status: 400,
      code: 'invalid_request',
      message: `Invalid ${part}: ${details.map((detail) => `${detail.path} ${detail.message}`).join('; ')}`,
      details,
    };
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'payload_too_large', message: 'Request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'unsupported_media_type', message: 'Content-Type must be application/json' };
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status, code: codeForStatus(status), message: fastifyError.message };
  return { status: 500, code: 'internal_error', message: 'Internal server error' };
}

/** A detail with every string in it cut to the error body's limit. */
function boundedDetail(detail: ErrorDetail): ErrorDetail {
  const bounded: ErrorDetail = { ...detail };
  for (const [key, value] of Object.entries(bounded)) {
    if (typeof value === 'string') bounded[key] = truncated(value, MAX_ERROR_DETAIL_STRING_LENGTH);
  }
  return bounded;
}

/**
 * The error body, small whatever the request held: its message and details may quote the input
 * (a field name, a path), so they are cut here, the one place every error passes through.
 */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: ErrorResponse): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  const body: { code: string; message: string; requestId: string; details?: ErrorDetail[] } = {
    code: error.code,
    message: truncated(error.message, MAX_ERROR_MESSAGE_LENGTH),
    requestId: request.id,
  };
  if (error.details && error.details.length > 0) body.details = error.details.slice(0, MAX_ERROR_DETAILS).map(boundedDetail);
  return reply.code(error.status).send({ error: body });
}

const CLIENT_ERRORS: Record<string, { status: number; reason: string; code: string; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', code: 'invalid_request', message: 'The request took too long to arrive' },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    code: 'invalid_request',
    message: 'The request line and headers exceed 16 KiB',
  },
};
const MALFORMED = { status: 400, reason: 'Bad Request', code: 'invalid_request', message: 'Malformed HTTP request' };

/**
 * Requests Node's HTTP parser refuses before any route sees them (a header too large, a bad
 * header character): answered with the same error body as every other error, then closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
  const requestId = newRequestId();
  const body = JSON.stringify({ error: { code: answer.code, message: answer.message, requestId } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** A request target with a NUL in its path or query, refused once the caller may learn it (access.ts). */
export function targetProblem(request: FastifyRequest): DomainError | undefined {
  return urlEncodedNul(request.url) ? new DomainError('invalid_request', `The request target ${NUL_MESSAGE}`) : undefined;
}

/** Form bodies (the OAuth endpoints) parsed as @fastify/formbody does, with a NUL refused like anywhere else. */
export function parseFormRefusingNul(text: string): Record<string, unknown> {
  if (urlEncodedNul(text)) throw new DomainError('invalid_request', `A form field ${NUL_MESSAGE}`);
  return parseQueryString(text);
}

/** 304 Not Modified, with no payload at all (a null one would be serialized and counted in Content-Length). */
export function sendNotModified(reply: FastifyReply): FastifyReply {
  return reply.code(304).send();
}

/** The headers of every response; set by the request hook (access.ts). */
export function addContractHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  reply.header('x-content-type-options', 'nosniff');
  // What answers a credential is that caller's alone (a key's secret, once): no cache may keep it.
  const headers = request.headers;
  if (headers.authorization !== undefined || headers['x-api-key'] !== undefined || headers.cookie !== undefined) {
    reply.header('cache-control', 'no-store');
  }
}

/**
 * Why a JSON body the parser refused is not JSON, with where when the engine says (its message
 * without the quoted input), or why it is refused though it is JSON: a `__proto__` or
 * `constructor.prototype` key, which could poison what reads the object later.
 */
export function jsonBodyProblem(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    const reason = (error as Error).message.replace(/, ".*" is not valid JSON$/s, '').replace(/ in JSON at position (\d+).*$/s, (_match, at: string) => {
      const before = text.slice(0, Number(at));
      const line = before.split('\n').length;
      return ` at position ${at} (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
    });
    return `The body is not valid JSON: ${reason}`;
  }
  return 'The body may not use __proto__ or constructor.prototype as a key';
}

/** The answer to a request the router could not read, in the API's words rather than Fastify's. */
export function frameworkProblem(error: FastifyError): ErrorResponse {
  const message =
    error.code === 'FST_ERR_BAD_URL'
      ? 'The request path is not valid: each % must begin a percent-encoded UTF-8 character (%XX)'
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? `The request path has a segment longer than ${MAX_PATH_PARAMETER_LENGTH} characters`
        : 'The request could not be routed';
  return { status: 400, code: 'invalid_request', message };
}

/** The answer to a request no route matched: 405 with `Allow` when the path has other methods, else 404. */
function unmatched(request: FastifyRequest, routes: RouteMethods): ErrorResponse {
  const target = request.url.split(/[?#]/)[0] ?? '';
  const methods = routes.of(target);
  if (methods.length === 0) return { status: 404, code: 'not_found', message: `No route for ${request.method} ${target}` };
  // A preflight is answered wherever CORS applies (cors.ts decided it for this request), so OPTIONS is a method of those paths.
  const allowed = request.corsAllowed ? [...methods, 'OPTIONS'] : methods;
  return {
    status: 405,
    code: 'method_not_allowed',
    message: `${target} does not take ${request.method}; it takes ${allowed.join(', ')}`,
    headers: { allow: allowed.join(', ') },
  };
}

export function installHttpContract(app: FastifyInstance): void {
  // JSON is the only body type of the API (the OAuth routes add form data in their own scope).
  // An empty body parses to nothing, so POSTs that take no body may still send the header.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    noteRawBody(request, text);
    if (text === '') return done(null, undefined);
    const problem = jsonTextProblem(text, MAX_JSON_DEPTH);
    if (problem === 'too_deep') return done(new DomainError('invalid_request', `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    parseJson(request, text, (error, parsed) => {
      if (error) return done(new DomainError('invalid_request', jsonBodyProblem(text)), undefined);
      if (problem === 'nul') {
        const path = nulPath(parsed) ?? '/';
        return done(new DomainError('invalid_request', `${path} ${NUL_MESSAGE}`, [{ path, message: NUL_MESSAGE }]), undefined);
      }
      noteBodyLength(parsed, text.length);
      done(null, parsed);
    });
  });

  // A route that takes a JSON body refuses a request that names no content type at all. Only
  // such routes get the check, so the others do not pay for a hook.
  const requireContentType = async (request: FastifyRequest) => {
    if (request.headers['content-type'] === undefined) throw new DomainError('unsupported_media_type', 'Content-Type must be application/json');
  };
  app.addHook('onRoute', (route) => {
    if (!route.schema?.body) return;
    const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
    route.preValidation = [requireContentType, ...existing];
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const response = describeError(error);
    if (response.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(request, reply, response);
  });

  // No route matched: a path the API does not have (404), or one it has with other methods (405).
  const routes = recordRouteMethods(app);
  app.setNotFoundHandler((request, reply) => sendError(request, reply, unmatched(request, routes)));
}
