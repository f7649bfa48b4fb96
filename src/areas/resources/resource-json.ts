// A resource's API JSON and its stored columns, each made in one place. The JSON values (state,
// attributes, tags) are stored as JSON.stringify's text and spliced into the API JSON as they are:
// parsing them only to serialize them again was most of a list's cost.
import type { ResourcesTable } from '../../storage/schema.js';
import type { Resource } from './store.js';

/** A resource as stored: its JSON values as text. */
export type ResourceColumns = Pick<ResourcesTable, 'id' | 'name' | 'type' | 'state' | 'attributes' | 'tags' | 'version' | 'created_at' | 'updated_at'>;

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
