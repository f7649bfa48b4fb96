// What an area of the API is to the rest of the house: one object each area exports from its
// index.ts, and the list in areas/index.ts that app.ts and context.ts loop over. Adding an area is
// writing its folder, adding its service to `Services` and its object to the list.
import type { FastifyInstance, FastifyPluginAsync, FastifyTypeProvider, RawServerDefault } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { DomainEvents } from '../domain-events.js';
import type { AccountWrites } from '../account-writes/pipeline.js';
import type { Services } from '../services.js';
import type { StreamHub } from './events/stream.js';
import type { Capability } from './system/capability.js';

/** What an area's routes are given. */
export interface RouteContext {
  config: Config;
  clock: Clock;
  services: Services;
  streams: StreamHub;
  /** Every area's line of `GET /api/v1/capabilities` (the system area serves them). */
  capabilities: Capability[];
}

/** What an area's reactions are registered with, once every service is built. */
export interface ReactionContext {
  /** Reactions to credentials and apps ending. */
  domain: DomainEvents;
  /** Reactions to an account's writes (src/account-writes/pipeline.ts). */
  writes: AccountWrites;
  services: Services;
  streams: StreamHub;
}

export interface Area {
  readonly name: string;
  /** Its named schemas, components of the OpenAPI document. */
  readonly schemas?: readonly TSchema[];
  /** Security schemes it adds to the OpenAPI document. */
  readonly securitySchemes?: Record<string, object>;
  /** Its line of `GET /api/v1/capabilities`, from the constants its own rules use. */
  capability?(config: Config): Capability;
  registerRoutes?(app: FastifyInstance, context: RouteContext): Promise<void>;
  /** Registers what it does when other areas change things (docs/architecture.md lists them). */
  registerReactions?(context: ReactionContext): void;
}

/** `registerRoutes` for routes written as one Fastify plugin, given the options `pick` takes from the context. */
export function pluginRoutes<Options extends object>(
  plugin: FastifyPluginAsync<Options, RawServerDefault, FastifyTypeProvider>,
  pick: (context: RouteContext) => Options,
): NonNullable<Area['registerRoutes']> {
  return async (app, context) => {
    await app.register(plugin, pick(context));
  };
}
