// Developer signup and the session cookie. The cookie authenticates only these routes (and a
// console, if one is built): it is never an API credential.
import cookie from '@fastify/cookie';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { unauthorized } from '../../domain-errors.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { DisplayName, NoContent, ref, Timestamp } from '../../platform/schemas.js';
import { SIGNUP_ATTEMPTS_PER_HOUR, type DeveloperService, type DeveloperSession } from './service.js';
import type { Capability } from '../system/capability.js';
import type { Config } from '../../config.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';

export const SESSION_COOKIE = '__Host-service_developer_session';

const SessionSchema = Type.Object(
  {
    account: Type.Object({ id: Type.String(), name: Type.String(), email: Type.Union([Type.String(), Type.Null()]), createdAt: Timestamp }),
    session: Type.Object({ expiresAt: Timestamp }),
  },
  { $id: 'DeveloperSession' },
);

export const developerSchemas = [SessionSchema];

/** The session cookie as an OpenAPI security scheme; it authenticates the developer routes only. */
export const developerSecuritySchemes = {
  developerSession: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'The developer session, set by signup and ended by logout' },
};

const setsCookie = (description: string) => ({ 'set-cookie': { type: 'string', description } });
const SESSION_COOKIE_SET = `The session: \`${SESSION_COOKIE}=<token>; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=<seconds>\``;
const SESSION_COOKIE_EXPIRED = `The cookie expired: \`${SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0\``;

/** Exactly the attributes the specification names: __Host- prefix, Path=/, Secure, HttpOnly, SameSite=Strict. */
function sessionCookie(value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}`;
}

export const developerRoutes: FastifyPluginAsyncTypebox<{ developer: DeveloperService; sessionTtlSeconds: number }> = async (
  app,
  { developer, sessionTtlSeconds },
) => {
  await app.register(cookie);
  const publicRoute = { auth: 'public' as const };
  const view = (session: DeveloperSession) => ({ account: session.account, session: session.session });

  app.post(
    '/api/v1/developer/signup',
    {
      config: {
        ...publicRoute,
        // The session token travels in the cookie: a stored answer is sealed.
        outcome: {
          status: 201,
          payload: view,
          headers: (created: DeveloperSession & { token: string }) => ({ 'set-cookie': sessionCookie(created.token, sessionTtlSeconds) }),
          secret: true,
        },
      },
      schema: {
        operationId: 'signUp',
        summary: 'Create a developer account and start a session (no API key is returned)',
        tags: ['developer'],
        body: Type.Object(
          {
            name: DisplayName(),
            email: Type.String({ format: 'email', maxLength: 254 }),
          },
          { additionalProperties: false },
        ),
        response: {
          201: { ...ref('DeveloperSession'), headers: setsCookie(SESSION_COOKIE_SET) },
          403: errorResponse('signup_closed'),
          409: errorResponse('conflict', 'an account with this email already exists'),
          429: errorResponse(
            'rate_limited',
            `the rate limit, or ${SIGNUP_ATTEMPTS_PER_HOUR} signup attempts from one address in an hour, is reached; Retry-After says when to try again`,
          ),
        },
      },
      // Every attempt counts, failed ones too: the count is taken before the content type and body are checked.
      onRequest: async (request) => developer.countAttempt(request.ip),
    },
    async (request) => developer.signup(request.body, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/developer/session',
    {
      config: publicRoute,
      schema: {
        operationId: 'getDeveloperSession',
        summary: 'The current developer session (cookie)',
        tags: ['developer'],
        security: [{ developerSession: [] }],
        response: { 200: ref('DeveloperSession'), 401: errorResponse('unauthorized', 'no session cookie, or its session is unknown or expired') },
      },
    },
    async (request) => {
      const session = await developer.session(request.cookies[SESSION_COOKIE]);
      if (!session) throw unauthorized('No valid developer session', request.cookies[SESSION_COOKIE] !== undefined);
      return view(session);
    },
  );

  app.post(
    '/api/v1/developer/logout',
    {
      config: publicRoute,
      schema: {
        operationId: 'logOut',
        summary: 'End the developer session and expire its cookie',
        tags: ['developer'],
        // The cookie is optional: without one, or with an unknown one, the answer is the same.
        security: [{ developerSession: [] }, {}],
        response: { 204: { ...NoContent, headers: setsCookie(SESSION_COOKIE_EXPIRED) } },
      },
    },
    async (request, reply) => {
      await developer.logout(request.cookies[SESSION_COOKIE]);
      reply.header('set-cookie', sessionCookie('', 0));
      return reply.code(204).send(null);
    },
  );
};

export function developerCapability(config: Config): Capability {
  const sessionHours = config.developerSessionTtlSeconds / 3600;
  return {
    feature: {
      name: 'developer',
      description: 'Developer signup with a session cookie (no API key: the operator issues the first one)',
      signupAttemptsPerIpPerHour: SIGNUP_ATTEMPTS_PER_HOUR,
      sessionHours,
    },
    limits: { signupAttemptsPerIpPerHour: SIGNUP_ATTEMPTS_PER_HOUR, developerSessionHours: sessionHours },
  };
}
