// The API's Resource: its schemas, the one source of its type and of the list of resource types
// (the store, the service and the routes take them from here; the console and the client from the
// OpenAPI document made of these schemas).
import { Type, type Static } from 'typebox';
import { ref, Timestamp } from '../../platform/schemas.js';

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
