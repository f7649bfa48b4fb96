// The API's shapes of API keys and of the calling credential: the schemas the routes validate and
// document with, and the types the service works with, derived from them.
import { Type, type Static } from 'typebox';
import { DisplayName, Timestamp } from '../../platform/schemas.js';

/** How long a key lives when its creator does not say, in days. */
export const DEFAULT_KEY_DAYS = 90;
/** The longest a key may be issued for, in days. */
export const MAX_KEY_DAYS = 365;

const keyFields = {
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  createdAt: Timestamp,
  expiresAt: Timestamp,
};
/** How many keys that ended (revoked or expired) `GET /api/v1/keys?status=all` lists besides the active ones: the latest to end. */
export const ENDED_KEYS_LISTED = 100;

const KeyStatusSchema = Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')], {
  description: 'active, revoked, or expired: only `?status=all` lists the last two',
});
export type KeyStatus = Static<typeof KeyStatusSchema>;

const ApiKeySchema = Type.Object(
  {
    ...keyFields,
    lastUsedAt: Type.Union([Timestamp, Type.Null()]),
    status: KeyStatusSchema,
    revokedAt: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'ApiKey' },
);
const CreatedApiKeySchema = Type.Object(
  { ...keyFields, key: Type.String({ description: 'The secret; shown only in this response' }) },
  { $id: 'CreatedApiKey' },
);
const CredentialSummary = Type.Object(
  {
    account: Type.Object({ id: Type.String(), name: Type.String() }),
    credential: Type.Object({
      id: Type.String(),
      kind: Type.Union([Type.Literal('api_key'), Type.Literal('oauth_access_token')]),
      scopes: Type.Array(Type.String()),
      expiresAt: Timestamp,
      clientId: Type.Optional(Type.String()),
    }),
    api: Type.Object({ name: Type.String(), version: Type.String() }),
  },
  { $id: 'CredentialSummary' },
);

export const CreateKeyBody = Type.Object(
  {
    name: DisplayName(),
    scopes: Type.Array(Type.String(), { maxItems: 20 }),
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_KEY_DAYS, default: DEFAULT_KEY_DAYS })),
  },
  { additionalProperties: false },
);

export const ListKeysQuery = Type.Object({
  status: Type.Union([Type.Literal('active'), Type.Literal('all')], {
    default: 'active',
    description: `active: the usable keys; all: those and the ${ENDED_KEYS_LISTED} that ended last (revoked or expired), each with its status`,
  }),
});

/** PATCH /api/v1/keys/{id}: a key's name is all that changes; its scopes and expiry are what it was issued with. */
export const RenameKeyBody = Type.Object({ name: DisplayName() }, { additionalProperties: false });

export const keySchemas = [ApiKeySchema, CreatedApiKeySchema, CredentialSummary];

export type ApiKey = Static<typeof ApiKeySchema>;
export type CreateKey = Static<typeof CreateKeyBody>;
export type KeyListing = Static<typeof ListKeysQuery>['status'];
