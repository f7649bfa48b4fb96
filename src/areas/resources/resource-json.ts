// A resource's API JSON and its stored columns, each made in one place. The JSON values (state,
// attributes, tags) are stored as JSON.stringify's text and spliced into the API JSON as they are:
// parsing them only to serialize them again was most of a list's cost.
import type { Selectable } from 'kysely';
import type { ResourcesTable } from '../../storage/schema.js';
import type { Resource, ResourceState, ResourceType } from './schemas.js';

/** The columns a resource is read from. */
export const RESOURCE_COLUMNS = ['id', 'name', 'type', 'state', 'attributes', 'tags', 'version', 'created_at', 'updated_at'] as const;

/** A resource as stored: its JSON values as text. */
export type ResourceColumns = Pick<Selectable<ResourcesTable>, (typeof RESOURCE_COLUMNS)[number]>;

/** The resource its stored form holds. */
export function resourceOf(row: ResourceColumns): Resource {
  return {
    id: row.id,
    name: row.name,
    type: row.type as ResourceType,
    state: JSON.parse(row.state) as ResourceState,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
    tags: JSON.parse(row.tags) as string[],
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The stored form of a resource. */
export function resourceColumns(resource: Resource): ResourceColumns {
  return {
    id: resource.id,
    name: resource.name,
    type: resource.type,
    state: JSON.stringify(resource.state),
    attributes: JSON.stringify(resource.attributes),
    tags: JSON.stringify(resource.tags),
    version: resource.version,
    created_at: resource.createdAt,
    updated_at: resource.updatedAt,
  };
}

/** The API's Resource as JSON text, from its columns. */
export function resourceJson(columns: ResourceColumns): string {
  return (
    `{"id":${JSON.stringify(columns.id)},"name":${JSON.stringify(columns.name)},"type":${JSON.stringify(columns.type)},` +
    `"state":${columns.state},"attributes":${columns.attributes},"tags":${columns.tags},"version":${Number(columns.version)},` +
    `"createdAt":${JSON.stringify(columns.created_at)},"updatedAt":${JSON.stringify(columns.updated_at)}}`
  );
}
