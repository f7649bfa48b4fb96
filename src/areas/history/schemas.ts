// The history's API shapes (api-decisions §13): the one source of their types, the OpenAPI
// document's components, and the client's and console's types generated from it.
import { Type, type Static } from 'typebox';
import { ref, Timestamp } from '../../platform/schemas.js';
import { StateSchema } from '../resources/schemas.js';
import { BUCKET_NAMES, HISTORY_LIMITS, type BucketName } from './points.js';

export const BucketNameSchema = Type.Unsafe<BucketName>(
  Type.Union(
    BUCKET_NAMES.map((name) => Type.Literal(name)),
    { description: 'Bucket length, aligned to whole multiples of it since the Unix epoch (UTC)' },
  ),
);

const HistoryPoint = Type.Object({ at: Timestamp, state: StateSchema }, { $id: 'HistoryPoint' });

const HistoryPage = Type.Object(
  {
    data: Type.Array(ref(HistoryPoint)),
    cursor: Type.Union([Timestamp, Type.Null()], { description: 'The last point’s `at`: pass it as `cursor` for the next page; null when the page is empty' }),
    hasMore: Type.Boolean(),
  },
  { $id: 'HistoryPage' },
);

const HistoryBucket = Type.Object(
  {
    start: Timestamp,
    count: Type.Integer({ minimum: 0, description: 'Points in the bucket' }),
    last: Type.Union([Type.Number(), Type.String(), Type.Boolean()], {
      description: 'The state of its last point (booleans without a point: the state carried over)',
    }),
    min: Type.Optional(Type.Number({ description: 'Sensors: the least numeric point' })),
    max: Type.Optional(Type.Number({ description: 'Sensors: the greatest numeric point' })),
    mean: Type.Optional(Type.Number({ description: 'Sensors: the mean of the numeric points' })),
    trueSeconds: Type.Optional(Type.Number({ minimum: 0, description: 'binary_sensor and switch: seconds spent true within the bucket (up to now)' })),
  },
  { $id: 'HistoryBucket' },
);

const HistoryBuckets = Type.Object({ bucket: BucketNameSchema, data: Type.Array(ref(HistoryBucket)) }, { $id: 'HistoryBuckets' });

const HistoryOfResource = Type.Object(
  {
    resourceId: Type.String(),
    data: Type.Union([Type.Array(ref(HistoryPoint)), Type.Array(ref(HistoryBucket))], { description: 'Points, or buckets when `bucket` was given' }),
    cursor: Type.Optional(Type.Union([Timestamp, Type.Null()])),
    hasMore: Type.Optional(Type.Boolean()),
  },
  { $id: 'HistoryOfResource' },
);

const HistoryOfResources = Type.Object({ bucket: Type.Optional(BucketNameSchema), data: Type.Array(ref(HistoryOfResource)) }, { $id: 'HistoryOfResources' });

export const BackfillBody = Type.Object(
  {
    points: Type.Array(Type.Object({ at: Timestamp, state: StateSchema }, { additionalProperties: false }), {
      minItems: 1,
      maxItems: HISTORY_LIMITS.backfill,
    }),
  },
  { additionalProperties: false },
);

const BackfillResult = Type.Object(
  { inserted: Type.Integer({ minimum: 0 }), replaced: Type.Integer({ minimum: 0, description: 'Points that replaced one at the same time' }) },
  { $id: 'HistoryBackfillResult' },
);

export type BackfillResultBody = Static<typeof BackfillResult>;

export const historySchemas = [HistoryPoint, HistoryPage, HistoryBucket, HistoryBuckets, HistoryOfResource, HistoryOfResources, BackfillResult];
