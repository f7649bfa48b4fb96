// The API's shapes of registered applications: the schemas the routes validate and document with,
// and the types the service works with, derived from them.
import { Type, type Static } from 'typebox';
import { DisplayName, Timestamp } from '../../platform/schemas.js';

/** The most redirect URIs an app may register. */
export const MAX_REDIRECT_URIS = 10;

const AppType = Type.Union([Type.Literal('public'), Type.Literal('confidential')]);
const RedirectUris = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
  minItems: 1,
  maxItems: MAX_REDIRECT_URIS,
  description: 'https, or http to a loopback host; matched exactly',
});
const Scopes = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20 });

const appFields = {
  id: Type.String(),
  clientId: Type.String(),
  name: Type.String(),
  type: AppType,
  redirectUris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};
const AppSchema = Type.Object(appFields, { $id: 'App' });
const AppWithSecretSchema = Type.Object(
  { ...appFields, clientSecret: Type.Optional(Type.String({ description: 'Confidential apps only; shown only here' })) },
  { $id: 'AppWithSecret' },
);

export const CreateAppBody = Type.Object({ name: DisplayName(), type: AppType, redirectUris: RedirectUris, scopes: Scopes }, { additionalProperties: false });
export const UpdateAppBody = Type.Object(
  {
    name: Type.Optional(DisplayName()),
    redirectUris: Type.Optional(RedirectUris),
    scopes: Type.Optional(Scopes),
    type: Type.Optional(Type.Unknown({ description: 'Not changeable: sending it is an error' })),
  },
  { additionalProperties: false },
);

export const appSchemas = [AppSchema, AppWithSecretSchema];

export type App = Static<typeof AppSchema>;
export type AppWithSecret = Static<typeof AppWithSecretSchema>;
export type CreateApp = Static<typeof CreateAppBody>;
export type AppChanges = Static<typeof UpdateAppBody>;
