// The rows of an import file as batch operations, and resources as rows of an export file: one
// module for `devdata-client resources import|export` and the console's import, so that both read
// (and the export writes) the same columns. NDJSON: one JSON object per line with a resource's
// fields. CSV (RFC 4180) with a header row: the columns of CSV_COLUMNS. A row with an id updates
// that resource (its version, when given, becomes ifMatch), one without creates one.
export { batchesOf } from './batch.js';
import { csvLine, csvRecords } from './csv.js';
import { RESOURCE_TYPES } from './generated/values.js';
import type { BatchCreate, BatchUpdate, Resource, ResourceState, ResourceType } from './types.js';

export type ImportFormat = 'ndjson' | 'csv';

/** One row of an import file as a batch operation: create (no id) or update (id given). */
export interface ImportRow {
  line: number;
  operation: BatchCreate | BatchUpdate;
}

export interface ImportRowError {
  line: number;
  message: string;
}

/** The columns of CSV, in the order an export writes them; an import's header may name any of them in any order. */
export const CSV_COLUMNS = ['id', 'name', 'type', 'state', 'tags', 'attributes', 'version'] as const;
type Column = (typeof CSV_COLUMNS)[number];

/** A resource's fields the server sets: an exported row has them, an import passes over them. */
const SET_BY_THE_SERVER = ['createdAt', 'updatedAt'];
const FIELDS: readonly string[] = [...CSV_COLUMNS, ...SET_BY_THE_SERVER];

/** The format a file name (".ndjson", ".jsonl", ".csv") or, failing that, its first character says. */
export function importFormatOf(fileName: string, text: string): ImportFormat {
  const extension = /\.([^./\\]+)$/.exec(fileName)?.[1]?.toLowerCase();
  if (extension === 'ndjson' || extension === 'jsonl') return 'ndjson';
  if (extension === 'csv') return 'csv';
  return withoutBom(text).trimStart().startsWith('{') ? 'ndjson' : 'csv';
}

/** Every row of the text: the valid ones as operations, the others as errors naming their line. */
export function parseImportRows(text: string, format: ImportFormat): { rows: ImportRow[]; errors: ImportRowError[] } {
  const rows: ImportRow[] = [];
  const errors: ImportRowError[] = [];
  const entries = format === 'csv' ? csvFields(withoutBom(text)) : ndjsonFields(withoutBom(text));
  for (const entry of entries) {
    const outcome = 'message' in entry ? entry : operationOf(entry.fields);
    if (typeof outcome === 'string') errors.push({ line: entry.line, message: outcome });
    else if ('message' in outcome) errors.push(outcome);
    else rows.push({ line: entry.line, operation: outcome });
  }
  return { rows, errors };
}

/**
 * A state typed as text, read as the resource's type needs it: a sensor's is a number when it reads
 * as one (else the text), a binary_sensor's or switch's true/on/1 or false/off/0, a text's the text.
 * Undefined when it cannot be read (a switch's "maybe").
 */
export function stateFromText(type: ResourceType, text: string): ResourceState | undefined {
  switch (type) {
    case 'binary_sensor':
    case 'switch':
      if (/^\s*(true|on|1)\s*$/i.test(text)) return true;
      if (/^\s*(false|off|0)\s*$/i.test(text)) return false;
      return undefined;
    case 'sensor':
      return /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(text) && Number.isFinite(Number(text)) ? Number(text) : text;
    default:
      return text;
  }
}

/** What is wrong with a state stateFromText cannot read. */
export function unreadableState(type: ResourceType, text: string): string {
  return `a ${type} takes on or off (true/false), not "${text}"`;
}

/** The header row of a CSV export. */
export function csvHeader(options: ExportOptions = {}): string {
  return csvLine(exportedColumns(options));
}

export interface ExportOptions {
  /** Leave out id and version, so that importing the file creates new resources (a copy, say into another account). */
  withoutIds?: boolean;
}

/** A resource as one line of an export (with its line break), which parseImportRows reads back. */
export function exportLine(resource: Resource, format: ImportFormat, options: ExportOptions = {}): string {
  if (format === 'ndjson') {
    const json = options.withoutIds ? { ...resource, id: undefined, version: undefined } : resource;
    return `${JSON.stringify(json)}\n`;
  }
  const cells: Record<Column, string> = {
    id: resource.id,
    name: resource.name,
    type: resource.type,
    state: String(resource.state),
    tags: tagsCell(resource.tags),
    attributes: JSON.stringify(resource.attributes),
    version: String(resource.version),
  };
  return csvLine(exportedColumns(options).map((column) => cells[column]));
}

function exportedColumns(options: ExportOptions): Column[] {
  return CSV_COLUMNS.filter((column) => !options.withoutIds || (column !== 'id' && column !== 'version'));
}

// Tags are written "a;b"; when one holds a semicolon, starts with "[" or has surrounding spaces
// (which reading trims), the cell is their JSON array instead, which reading knows by its "[".
function tagsCell(tags: readonly string[]): string {
  return tags.some((tag) => tag.includes(';') || tag.startsWith('[') || tag.trim() !== tag) ? JSON.stringify(tags) : tags.join(';');
}

function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

type Fields = Record<string, unknown>;
type Entry = { line: number; fields: Fields } | ImportRowError;

function* ndjsonFields(text: string): Generator<Entry> {
  const lines = text.split(/\r?\n/);
  for (const [index, source] of lines.entries()) {
    const line = index + 1;
    if (source.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (error) {
      yield { line, message: `not JSON: ${(error as Error).message}` };
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) yield { line, message: `a row is a JSON object, not ${kindOf(value)}` };
    else yield { line, fields: value as Fields };
  }
}

function* csvFields(text: string): Generator<Entry> {
  const records = csvRecords(text);
  let header: Column[] | undefined;
  for (const record of records) {
    if ('error' in record) {
      yield { line: record.line, message: record.error };
      if (header === undefined) return;
      continue;
    }
    const { line, cells } = record;
    if (header === undefined) {
      const problem = headerProblem(cells);
      if (problem !== undefined) {
        yield { line, message: problem };
        return;
      }
      header = cells.map((cell) => cell.trim()) as Column[];
      continue;
    }
    if (cells.length === 1 && cells[0] === '') continue;
    if (cells.length !== header.length) {
      yield { line, message: `${cells.length} cells where the header has ${header.length}` };
      continue;
    }
    const row = new Map(header.map((column, index) => [column, cells[index]!]));
    const fields = csvRowFields(row);
    yield typeof fields === 'string' ? { line, message: fields } : { line, fields };
  }
}

function headerProblem(cells: string[]): string | undefined {
  const names = cells.map((cell) => cell.trim());
  const unknown = names.find((name) => !FIELDS.includes(name));
  if (unknown !== undefined) return `the header row names ${unknown === '' ? 'an empty column' : `"${unknown}"`}; the columns are ${CSV_COLUMNS.join(', ')}`;
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) return `the header row names "${twice}" twice`;
  return undefined;
}

/** A CSV row's cells as the fields an NDJSON row would have. An empty cell is a field not given, except a new resource's state: the empty text. */
function csvRowFields(row: Map<string, string>): Fields | string {
  const fields: Fields = {};
  const cell = (column: Column) => {
    const value = row.get(column);
    return value === undefined || value.trim() === '' ? undefined : value;
  };
  for (const column of ['id', 'type'] as const) if (cell(column) !== undefined) fields[column] = cell(column)!.trim();
  if (cell('name') !== undefined) fields.name = cell('name');
  const version = cell('version');
  if (version !== undefined) fields.version = /^\s*\d{1,15}\s*$/.test(version) ? Number(version) : version;
  const attributes = cell('attributes');
  if (attributes !== undefined) {
    try {
      fields.attributes = JSON.parse(attributes);
    } catch {
      return `attributes: not JSON: ${attributes}`;
    }
  }
  const tags = cell('tags');
  if (tags !== undefined) {
    const parsed = tagsFromCell(tags);
    if (parsed === undefined) return `tags: "${tags}" starts with "[" but is not a JSON array of text`;
    fields.tags = parsed;
  }
  const state = row.get('state');
  if (state !== undefined && (state.trim() !== '' || fields.id === undefined)) {
    const type = fields.type;
    if (typeof type !== 'string' || !isResourceType(type))
      return type === undefined ? 'a state needs the type to be read (the type column)' : typeProblem(type);
    const value = stateFromText(type, state);
    if (value === undefined) return `state: ${unreadableState(type, state)}`;
    fields.state = value;
  }
  return fields;
}

function tagsFromCell(cell: string): string[] | undefined {
  const text = cell.trim();
  if (!text.startsWith('[')) return text.split(';').flatMap((tag) => (tag.trim() === '' ? [] : [tag.trim()]));
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.every((tag) => typeof tag === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The operation a row's fields ask for, or what is wrong with them. Shapes only: the server checks the values' rules. */
function operationOf(fields: Fields): BatchCreate | BatchUpdate | string {
  const unknown = Object.keys(fields).find((field) => !FIELDS.includes(field));
  if (unknown !== undefined) return `unknown field "${unknown}" (a row has ${CSV_COLUMNS.join(', ')})`;
  const { id, name, type, state, tags, attributes, version } = fields;
  if (id !== undefined && (typeof id !== 'string' || id === '')) return `id: a resource's id, not ${kindOf(id)}`;
  if (name !== undefined && typeof name !== 'string') return `name: text, not ${kindOf(name)}`;
  if (type !== undefined && (typeof type !== 'string' || !isResourceType(type))) return typeProblem(type);
  if (state !== undefined && typeof state !== 'string' && typeof state !== 'number' && typeof state !== 'boolean')
    return `state: a number, text or true/false, not ${kindOf(state)}`;
  if (tags !== undefined && !(Array.isArray(tags) && tags.every((tag) => typeof tag === 'string'))) return `tags: a list of text, not ${kindOf(tags)}`;
  if (attributes !== undefined && (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes)))
    return `attributes: a JSON object, not ${kindOf(attributes)}`;
  if (version !== undefined && !(Number.isInteger(version) && (version as number) >= 1))
    return `version: a whole number from 1, not ${JSON.stringify(version)}`;
  const changes = {
    ...(name !== undefined && { name }),
    ...(state !== undefined && { state: state as ResourceState }),
    ...(attributes !== undefined && { attributes: attributes as Record<string, unknown> }),
    ...(tags !== undefined && { tags: tags as string[] }),
  };
  if (id !== undefined) {
    // The type of a resource never changes: an update row's type served to read its CSV state.
    if (Object.keys(changes).length === 0) return 'nothing to change: an update row gives name, state, attributes or tags';
    return { op: 'update', id, ...(version !== undefined && { ifMatch: version as number }), ...changes };
  }
  const missing = (['name', 'type', 'state'] as const).filter((field) => fields[field] === undefined);
  if (missing.length > 0) return `a new resource needs ${missing.join(', ')} (or an id, to update one)`;
  return { op: 'create', type: type as ResourceType, ...changes } as BatchCreate;
}

function isResourceType(type: string): type is ResourceType {
  return (RESOURCE_TYPES as readonly string[]).includes(type);
}

function typeProblem(type: unknown): string {
  return `type: one of ${RESOURCE_TYPES.join(', ')}, not ${JSON.stringify(type)}`;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (value === '') return 'empty text';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}
