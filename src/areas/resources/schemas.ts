// The API's Resource: its schemas, the one source of its type and of the list of resource types
// (the store, the service and the routes take them from here; the console and the client from the
// OpenAPI document made of these schemas).
import { Type, type Static } from 'typebox';
import { ref, Timestamp } from '../../platform/schemas.js';

/** A resource's limits (docs/decisions.md: "Resources"): the rules check them, the schemas state them. */
export const NAME_MAX = 200;
export const STATE_TEXT_MAX = 255;
export const ATTRIBUTES_MAX_BYTES = 16 * 1024;
export const TAGS_MAX = 20;

/** The resource types, in the order the API lists them (docs/decisions.md: "Resources"). */
export const RESOURCE_TYPES = ['sensor', 'binary_sensor', 'switch', 'text'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

// Typed by hand: Static cannot read the literals' union out of a mapped array.
export const ResourceTypeSchema = Type.Unsafe<ResourceType>(Type.Union(RESOURCE_TYPES.map((type) => Type.Literal(type))));
export const StateSchema = Type.Union([Type.Number(), Type.String(), Type.Boolean()], {
  description: 'sensor: number or text; binary_sensor and switch: boolean; text: text',
});
export type ResourceState = Static<typeof StateSchema>;

export const ResourceSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    type: ResourceTypeSchema,
    state: StateSchema,
    attributes: Type.Record(Type.String(), Type.Unknown()),
    tags: Type.Array(Type.String()),
    version: Type.Integer({ minimum: 1 }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Resource' },
);
export type Resource = Static<typeof ResourceSchema>;

const ResourceList = Type.Object(
  { data: Type.Array(ref(ResourceSchema)), limit: Type.Integer(), offset: Type.Integer(), total: Type.Integer(), hasMore: Type.Boolean() },
  { $id: 'ResourceList' },
);

export const resourceSchemas = [ResourceSchema, ResourceList];

const Attributes = Type.Record(Type.String(), Type.Unknown(), {
  description: `Free details such as unit_of_measurement; at most ${ATTRIBUTES_MAX_BYTES / 1024} KiB as JSON`,
});
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: TAGS_MAX, uniqueItems: true });
// The length rule applies after trimming, which a JSON Schema cannot say: the service checks it
// (NAME_MAX), and the schema states it only in words, so that no second number can disagree.
const Name = Type.String({
  minLength: 1,
  pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$',
  description: `1-${NAME_MAX} characters after trimming surrounding white space; no control characters`,
});

/** What a creation sends (POST /api/v1/resources, and a batch's create). */
export const CreateResourceFields = {
  name: Name,
  type: ResourceTypeSchema,
  state: StateSchema,
  attributes: Type.Optional(Attributes),
  tags: Type.Optional(Tags),
};
/** What an update may send (PATCH /api/v1/resources/{id}, and a batch's update). */
export const UpdateResourceFields = {
  name: Type.Optional(Name),
  state: Type.Optional(StateSchema),
  attributes: Type.Optional(Attributes),
  tags: Type.Optional(Tags),
  type: Type.Optional(Type.Unknown({ description: 'Not changeable: sending it is an error' })),
};
export const CreateResourceBody = Type.Object(CreateResourceFields, { additionalProperties: false });
export const UpdateResourceBody = Type.Object(UpdateResourceFields, { additionalProperties: false });
