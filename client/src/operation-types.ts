// The shapes of a generated operation's input, from the types openapi-typescript writes for it.

/** Per-call options of every operation. */
export interface CallOptions {
  /** Aborts the call (and its retries). */
  signal?: AbortSignal;
  /** Extra request headers, e.g. `X-Request-Id` to tie the call to your own logs. */
  headers?: Record<string, string>;
  /**
   * The `Idempotency-Key` of a POST, PATCH or DELETE (1-255 characters from `!` to `~`). Without
   * it each call sends a fresh random one; pass your own to make a call that you repeat later (after
   * a crash, say) take effect once: the server answers the repeat with the first call's response.
   */
  idempotencyKey?: string;
}

type Present<T> = [NonNullable<T>] extends [never] ? false : true;

/** `path`, `query` and `header` parameters, as the operation declares them (cookies never). */
type ParameterInput<Operation> = Operation extends { parameters: infer Parameters }
  ? { [Key in keyof Parameters as Key extends 'cookie' ? never : Present<Parameters[Key]> extends true ? Key : never]: Parameters[Key] }
  : object;

type BodyInput<Operation> = Operation extends { requestBody?: infer Body }
  ? Present<Body> extends false
    ? object
    : Operation extends { requestBody: { content: { 'application/json': infer Json } } }
      ? { body: Json }
      : { body?: NonNullable<Body> extends { content: { 'application/json': infer Json } } ? Json : never }
  : object;

/** What a generated method takes: `{ path, query, header, body }`, each only where the operation has it. */
export type OperationInput<Operation> = ParameterInput<Operation> & BodyInput<Operation>;

/** The JSON body of an operation's response with this status. */
export type JsonResponse<Operation, Status extends number> = Operation extends { responses: { [S in Status]: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;
