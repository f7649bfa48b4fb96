// Idempotency-Key on every POST, PATCH and DELETE under /api/v1 (api-decisions §11). The first
// request with a key runs; a route that declares its `outcome` records its answer in the
// transaction of its effect (the storage's OutcomeRecord), so the effect and the answer to a retry
// commit together; any other answer a retry would get again (a 404, 409 or 412, a write that made
// no transaction) is stored as it is sent. A later request with the key and the same method, path
// and body is answered from storage byte for byte with `Idempotent-Replayed: true`; another with
// the key while the first runs here gets 409, with other content 422. On several processes two
// requests with one key that run at once cannot both commit: the second's record meets the first's
// and its transaction rolls back, and it answers with the first's outcome.
import { createHash } from 'node:crypto';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAbortHookHandler,
  onResponseHookHandler,
  onSendHookHandler,
  preValidationHookHandler,
  RouteOptions,
} from 'fastify';
import { DomainError } from '../domain-errors.js';
import { IDEMPOTENCY_TTL_MS, type IdempotentRequests, type StoredResponse } from '../idempotency/service.js';
import { OutcomeTaken, type OutcomeRecord } from '../storage/transaction.js';
import { JSON_CONTENT_TYPE } from './schemas.js';

/** How a route answers the value its handler returns: the one place its success response is made, first or replayed. */
// biome-ignore lint/suspicious/noExplicitAny: each route's value is its own; the route declares the outcome beside the handler that returns it.
export interface RouteOutcome<Value = any> {
  status: number;
  /** The body: the value itself unless this says otherwise (a JSON text is sent as it is); none when it returns undefined. */
  payload?(value: Value): unknown;
  headers?(value: Value): Record<string, string>;
  /** The answer holds a secret (a new key, a signing secret): it is stored sealed. */
  secret?: true;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    outcome?: RouteOutcome;
  }
  interface FastifyRequest {
    idempotent: IdempotentRequest | undefined;
    /** SHA-256 of the raw body, taken by the JSON parser when an Idempotency-Key was sent. */
    bodyDigest: string | undefined;
  }
}

/** How long a key's answer is kept, in hours: as `capabilities` and the document (`x-kept-hours`) state it. */
export const IDEMPOTENCY_KEPT_HOURS = IDEMPOTENCY_TTL_MS / 3_600_000;

/** A key is 1-255 characters from 0x21 to 0x7E. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{1,255}$';
const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);
const WRITE_METHODS = new Set(['POST', 'PATCH', 'DELETE']);
/** The response headers a replay repeats; the others are the replay's own (its request id, its rate limit). */
const REPLAYED_HEADERS = ['content-type', 'etag', 'location', 'set-cookie'];

/** What GET /api/v1/capabilities says of Idempotency-Key. */
export function idempotencyFeature(): { name: string; description: string; [detail: string]: unknown } {
  return {
    name: 'idempotency',
    description: 'Idempotency-Key on every POST, PATCH and DELETE: a retry is answered as the first request was, and does nothing again',
    header: 'Idempotency-Key',
    replayHeader: 'Idempotent-Replayed',
    keptHours: IDEMPOTENCY_KEPT_HOURS,
    storedStatuses: ['2xx', 404, 409, 412],
  };
}

/** Whether a request of this method to this route takes an Idempotency-Key. */
export function takesIdempotencyKey(method: string, url: string): boolean {
  return WRITE_METHODS.has(method) && url.startsWith('/api/v1/');
}

/** Answers a retry would get again: success, and the refusals that do not change by retrying as they are. */
function storable(status: number): boolean {
  return (status >= 200 && status < 300) || status === 404 || status === 409 || status === 412;
}

/** The outcome a service records in the transaction of the request's effect, when the request sent a key. */
export function outcomeRecordOf(request: FastifyRequest): OutcomeRecord | undefined {
  return request.idempotent;
}

/** Notes the digest of a raw JSON body for the request's fingerprint; only requests with a key pay for it. */
export function noteRawBody(request: FastifyRequest, text: string): void {
  if (request.headers['idempotency-key'] !== undefined) request.bodyDigest = sha256(text);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A request that sent a key and runs: what it records, and whether its answer is stored yet. */
class IdempotentRequest implements OutcomeRecord {
  /** The answer recorded with the effect, once its transaction recorded it. */
  recorded: StoredResponse | undefined;
  /** Answered from storage: nothing more to store. */
  replayed = false;

  constructor(
    readonly scope: string,
    readonly key: string,
    readonly fingerprint: string,
    private readonly reply: FastifyReply,
    private readonly requests: IdempotentRequests,
  ) {}

  /** Lets go of the key in this process, once. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.requests.end(this.scope, this.key);
  }

  private released = false;

  get recorder(): IdempotentRequests {
    return this.requests;
  }

  /** The answer the row being written holds: recorded once the row is in the transaction. */
  private pending: StoredResponse | undefined;

  rowOf(value: unknown): object | undefined {
    const outcome = this.reply.request.routeOptions.config.outcome;
    if (!outcome) return undefined;
    this.pending = responseOf(this.reply, outcome, value);
    return this.requests.rowOf(this.scope, this.key, this.fingerprint, this.pending, outcome.secret === true);
  }

  written(): void {
    this.recorded = this.pending;
  }
}

/** The response a route's outcome makes of a value, as it is sent and stored. */
function responseOf(reply: FastifyReply, outcome: RouteOutcome, value: unknown): StoredResponse {
  const payload = outcome.payload ? outcome.payload(value) : value;
  const headers: Record<string, string> = { ...outcome.headers?.(value) };
  let body = '';
  if (payload !== undefined && payload !== null) {
    // The route's serializer for its status, as Fastify would apply it.
    const serialized = typeof payload === 'string' ? payload : reply.code(outcome.status).serialize(payload);
    body = typeof serialized === 'string' ? serialized : Buffer.from(serialized as Uint8Array).toString();
    headers['content-type'] = JSON_CONTENT_TYPE;
  }
  return { status: outcome.status, headers, body };
}

/** A route's hooks of one kind as a list. */
function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

function send(reply: FastifyReply, response: StoredResponse, replayed = false): FastifyReply {
  reply.code(response.status).headers(response.headers);
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(response.body === '' ? null : response.body);
}

const reused = () =>
  new DomainError('idempotency_key_reused', 'This Idempotency-Key was used with another request (method, path or body); use a new key for a new request');
const inUse = () =>
  new DomainError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry once it has finished', undefined, {
    retryAfterSeconds: 1,
  });

export function installIdempotency(app: FastifyInstance, requests: IdempotentRequests): void {
  app.decorateRequest('idempotent', undefined);
  app.decorateRequest('bodyDigest', undefined);

  /** Replays the stored outcome of the request's key, or refuses the request when it is another one. */
  async function answerFromStorage(reply: FastifyReply, scope: string, key: string, fingerprint: string): Promise<boolean> {
    const stored = await requests.find(scope, key);
    if (!stored) return false;
    if (stored.fingerprint !== fingerprint) throw reused();
    send(reply, stored.response, true);
    return true;
  }

  /** The key's check before the route runs: a replay, a refusal, or the request marked as running it. */
  async function admit(request: FastifyRequest, reply: FastifyReply, key: string): Promise<FastifyReply | undefined> {
    const scope = request.credential?.accountId ?? `ip:${request.ip}`;
    const fingerprint = sha256(`${request.method} ${request.url}\n${request.bodyDigest ?? sha256('')}`);
    const running = requests.begin(scope, key, fingerprint);
    if (running !== undefined) throw running === fingerprint ? inUse() : reused();
    // The request holds the key from here: however it ends (an abort during the lookup too), it lets go.
    const idempotent = new IdempotentRequest(scope, key, fingerprint, reply, requests);
    request.idempotent = idempotent;
    try {
      if (await answerFromStorage(reply, scope, key, fingerprint)) {
        idempotent.replayed = true;
        idempotent.release();
        return reply;
      }
    } catch (error) {
      idempotent.release();
      throw error;
    }
    return undefined;
  }

  // Only the writes take the hooks, and they stay synchronous for a request without a key: a hook
  // on every request, or an async one, costs every request its promises.
  const preValidation: preValidationHookHandler = (request, reply, done) => {
    const header = request.headers['idempotency-key'];
    // A malformed key is the header schema's to refuse (platform/openapi.ts), in its own words.
    if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) return done();
    // A replay was sent: the route must not run (a callback hook that answered does not call done).
    admit(request, reply, header).then((sent) => {
      if (!sent) done();
    }, done);
  };

  // An answer not recorded with an effect is stored as it goes out, if a retry would get it again.
  const onSend: onSendHookHandler = (request, reply, payload, done) => {
    const idempotent = request.idempotent;
    if (!idempotent || idempotent.recorded || idempotent.replayed || !storable(reply.statusCode)) return done(null, payload);
    if (payload !== null && typeof payload !== 'string' && !Buffer.isBuffer(payload)) return done(null, payload);
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    const body = payload === null ? '' : payload.toString();
    const secret = request.routeOptions.config.outcome?.secret === true;
    requests.store(idempotent.scope, idempotent.key, idempotent.fingerprint, { status: reply.statusCode, headers, body }, secret).then(
      () => done(null, payload),
      (error: Error) => done(error),
    );
  };

  const end = (request: FastifyRequest) => request.idempotent?.release();
  const finished: onResponseHookHandler = (request, _reply, done) => {
    end(request);
    done();
  };
  const aborted: onRequestAbortHookHandler = (request, done) => {
    end(request);
    done();
  };

  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((method) => takesIdempotencyKey(method, route.url))) return;
    route.preValidation = [preValidation, ...hooksOf(route.preValidation)];
    route.onSend = [onSend, ...hooksOf(route.onSend)];
    route.onResponse = [finished, ...hooksOf(route.onResponse)];
    route.onRequestAbort = [aborted, ...hooksOf(route.onRequestAbort)];
  });

  // A route that declares its outcome returns a value; its answer is made here, or is the one its transaction recorded.
  app.addHook('onRoute', (route: RouteOptions) => {
    const outcome = route.config?.outcome;
    if (!outcome) return;
    const handler = route.handler;
    route.handler = async function outcomeHandler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      let value: unknown;
      try {
        value = await handler.call(this, request, reply);
      } catch (error) {
        // Its transaction ended: a retry finds its answer, or runs (an abort may have skipped the hooks that let go).
        request.idempotent?.release();
        const idempotent = request.idempotent;
        if (idempotent) idempotent.recorded = undefined;
        if (!(error instanceof OutcomeTaken) || !idempotent) throw error;
        // Another process ran the same key first and its answer committed; this one's effect rolled back.
        idempotent.replayed = true;
        if (await answerFromStorage(reply, idempotent.scope, idempotent.key, idempotent.fingerprint)) return reply;
        throw inUse();
      }
      request.idempotent?.release();
      // The answer its transaction recorded, or the same one made now: one way to make it.
      return send(reply, request.idempotent?.recorded ?? responseOf(reply, outcome, value));
    };
  });
}
