// The rows of an import file (client/src/import-rows.ts, shared by `devdata-client resources
// import|export` and the console): what an export writes imports back as the same resources, in
// NDJSON exactly and in CSV (RFC 4180) up to what CSV cannot tell apart; a bad row is reported with
// the line an editor shows and a message that says what is wrong, and the other rows still count.
import {
  BATCH_MAX_OPERATIONS,
  batchesOf,
  csvHeader,
  exportLine,
  importFormatOf,
  parseImportRows,
  RESOURCE_TYPES,
  type ImportFormat,
  type Resource,
} from '@devdata/client';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

/** A control character (C0, DEL or C1), which a name may not hold. */
const hasControl = (text: string) => [...text].some((char) => char.charCodeAt(0) <= 0x1f || (char.charCodeAt(0) >= 0x7f && char.charCodeAt(0) <= 0x9f));
/** A text that reads as a number: a sensor's CSV cell of it comes back as that number. */
const readsAsNumber = (text: string) => text.trim() !== '' && Number.isFinite(Number(text));

const text = (maxLength: number) => fc.string({ unit: 'grapheme', maxLength });
const jsonValue = fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown);
const state = {
  sensor: fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.parse(JSON.stringify(value)) as number),
    text(30).filter((value) => !readsAsNumber(value)),
  ),
  binary_sensor: fc.boolean(),
  switch: fc.boolean(),
  // Text holds anything: commas, quotes, line breaks of every kind.
  text: fc.oneof(text(30), fc.constantFrom('a,b', 'say "hi"', 'one\ntwo', 'one\r\ntwo', 'one\rtwo', ' padded ', '')),
} as const;

const resource: fc.Arbitrary<Resource> = fc.constantFrom(...RESOURCE_TYPES).chain((type) =>
  fc.record({
    id: fc.stringMatching(/^res_[A-Za-z0-9_-]{4,22}$/),
    name: text(40).filter((name) => name.trim() !== '' && !hasControl(name)),
    type: fc.constant(type),
    state: state[type] as fc.Arbitrary<Resource['state']>,
    attributes: fc.dictionary(
      text(10).filter((key) => key !== '__proto__'),
      jsonValue,
      { maxKeys: 3 },
    ),
    // Tags with semicolons, brackets and spaces too: the cell then holds their JSON array.
    tags: fc.uniqueArray(
      fc.oneof(
        text(12).filter((tag) => tag !== ''),
        fc.constantFrom('a;b', '[x', ' spaced ', 'kitchen'),
      ),
      { maxLength: 5 },
    ),
    version: fc.integer({ min: 1, max: 1_000_000 }),
    createdAt: fc.constant('2026-11-20T10:00:00.000Z'),
    updatedAt: fc.constant('2026-11-20T10:00:00.000Z'),
  }),
);

function exported(resources: Resource[], format: ImportFormat, withoutIds = false): string {
  const lines = resources.map((item) => exportLine(item, format, { withoutIds }));
  return (format === 'csv' ? csvHeader({ withoutIds }) : '') + lines.join('');
}

/** The line an editor shows each exported row on: one after the line breaks before it. */
function startLines(resources: Resource[], format: ImportFormat): number[] {
  let line = format === 'csv' ? 2 : 1;
  return resources.map((item) => {
    const start = line;
    line += exportLine(item, format).match(/\r\n|\r|\n/g)!.length;
    return start;
  });
}

describe('import rows: what an export writes imports back', () => {
  it('NDJSON: each resource as the update of itself at its version, or (without ids) as its creation, exactly', () => {
    fc.assert(
      fc.property(fc.array(resource, { maxLength: 8 }), (resources) => {
        const updates = parseImportRows(exported(resources, 'ndjson'), 'ndjson');
        expect(updates.errors).toEqual([]);
        expect(updates.rows).toEqual(
          resources.map(({ id, version, name, state, attributes, tags }, index) => ({
            line: index + 1,
            operation: { op: 'update', id, ifMatch: version, name, state, attributes, tags },
          })),
        );
        const creations = parseImportRows(exported(resources, 'ndjson', true), 'ndjson');
        expect(creations.errors).toEqual([]);
        expect(creations.rows.map((row) => row.operation)).toEqual(
          resources.map(({ name, type, state, attributes, tags }) => ({ op: 'create', name, type, state, attributes, tags })),
        );
      }),
    );
  });

  it('CSV: every row, on the line it starts, makes the same resource (an empty cell: the field as it is)', () => {
    fc.assert(
      fc.property(fc.array(resource, { maxLength: 8 }), (resources) => {
        const updates = parseImportRows(exported(resources, 'csv'), 'csv');
        expect(updates.errors).toEqual([]);
        expect(updates.rows.map((row) => row.line)).toEqual(startLines(resources, 'csv'));
        for (const [index, { operation }] of updates.rows.entries()) {
          const original = resources[index]!;
          if (operation.op !== 'update') throw new Error(`row ${index} is a ${operation.op}`);
          const { op, id, ifMatch, ...changes } = operation;
          expect([id, ifMatch]).toEqual([original.id, original.version]);
          // Each field given is the resource's own: the update changes nothing.
          expect({ ...original, ...changes }).toEqual(original);
        }
        const creations = parseImportRows(exported(resources, 'csv', true), 'csv');
        expect(creations.errors).toEqual([]);
        expect(
          creations.rows.map(({ operation }) => {
            if (operation.op !== 'create') throw new Error(`a row without an id is a ${operation.op}`);
            return { name: operation.name, type: operation.type, state: operation.state, attributes: operation.attributes ?? {}, tags: operation.tags ?? [] };
          }),
        ).toEqual(resources.map(({ name, type, state, attributes, tags }) => ({ name, type, state, attributes, tags })));
      }),
    );
  });

  it("CSV cannot tell a sensor's text that reads as a number from that number (NDJSON can)", () => {
    const sensor = {
      id: 'res_1234',
      name: 'Code',
      type: 'sensor',
      state: '42',
      attributes: {},
      tags: [],
      version: 1,
      createdAt: '',
      updatedAt: '',
    } as Resource;
    expect(parseImportRows(exported([sensor], 'csv', true), 'csv').rows[0]!.operation).toMatchObject({ state: 42 });
    expect(parseImportRows(exported([sensor], 'ndjson', true), 'ndjson').rows[0]!.operation).toMatchObject({ state: '42' });
  });
});

describe('import rows: CSV as RFC 4180 has it', () => {
  it('reads quoted cells with commas, doubled quotes and line breaks, CRLF or LF, a BOM, any column order', () => {
    const csv = '\uFEFFstate,type,name,tags\r\n"21,5",sensor,"The ""big"" one",a;b\r\n"line one\nline two",text,Note,\noff,switch,Lamp,"[""x;y""]"\n';
    const { rows, errors } = parseImportRows(csv, 'csv');
    expect(errors).toEqual([]);
    expect(rows).toEqual([
      { line: 2, operation: { op: 'create', name: 'The "big" one', type: 'sensor', state: '21,5', tags: ['a', 'b'] } },
      { line: 3, operation: { op: 'create', name: 'Note', type: 'text', state: 'line one\nline two' } },
      { line: 5, operation: { op: 'create', name: 'Lamp', type: 'switch', state: false, tags: ['x;y'] } },
    ]);
  });

  it('reads a state by its type: a number for a sensor when it is one, on/off and true/false for a switch', () => {
    const csv = 'name,type,state\nA,sensor,-2.5e3\nB,sensor,warm\nC,binary_sensor,ON\nD,switch,false\nE,text,12\nF,sensor,0x10\n';
    expect(parseImportRows(csv, 'csv').rows.map((row) => (row.operation as { state: unknown }).state)).toEqual([-2500, 'warm', true, false, '12', '0x10']);
  });

  it('updates by id with only the cells given, the version as ifMatch', () => {
    const csv = 'id,name,type,state,tags,attributes,version\nres_a,,sensor,7,,,3\nres_b,New name,,,,"{""unit"":""°C""}",\n';
    expect(parseImportRows(csv, 'csv').rows).toEqual([
      { line: 2, operation: { op: 'update', id: 'res_a', ifMatch: 3, state: 7 } },
      { line: 3, operation: { op: 'update', id: 'res_b', name: 'New name', attributes: { unit: '°C' } } },
    ]);
  });
});

describe('import rows: bad rows are named by their line, the others still read', () => {
  const errorsOf = (text: string, format: ImportFormat) => parseImportRows(text, format).errors;

  it('NDJSON: not JSON, not an object, unknown or mistyped fields, a creation missing fields, an update changing nothing', () => {
    const ndjson = [
      '{"name":"ok","type":"text","state":"x"}',
      '',
      '{"name":"broken",',
      '[1,2]',
      '{"name":"a","type":"sensor","state":1,"nmae":"typo"}',
      '{"name":"a","type":"thermostat","state":1}',
      '{"name":"a","type":"sensor","state":{"v":1}}',
      '{"name":"a","type":"sensor","state":1,"tags":"kitchen"}',
      '{"name":"a","type":"sensor","state":1,"attributes":[1]}',
      '{"id":"res_1","state":1,"version":0}',
      '{"name":"a","type":"sensor"}',
      '{"id":"res_1","type":"sensor","createdAt":"2026-01-01T00:00:00.000Z"}',
      '{"id":"","state":1}',
      '{"name":"last","type":"switch","state":true,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"x"}',
    ].join('\n');
    const { rows, errors } = parseImportRows(ndjson, 'ndjson');
    expect(rows.map((row) => row.line)).toEqual([1, 14]);
    expect(errors.map((error) => error.line)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    const [json, array, unknown, type, stateKind, tags, attributes, version, missing, nothing, id] = errors.map((error) => error.message);
    expect(json).toMatch(/^not JSON/);
    expect(array).toBe('a row is a JSON object, not a list');
    expect(unknown).toMatch(/^unknown field "nmae"/);
    expect(type).toBe('type: one of sensor, binary_sensor, switch, text, not "thermostat"');
    expect(stateKind).toMatch(/^state: .*not an object/);
    expect(tags).toMatch(/^tags: a list of text, not string "kitchen"/);
    expect(attributes).toBe('attributes: a JSON object, not a list');
    expect(version).toMatch(/^version: a whole number from 1, not 0/);
    expect(missing).toBe('a new resource needs state (or an id, to update one)');
    expect(nothing).toMatch(/^nothing to change/);
    expect(id).toBe("id: a resource's id, not empty text");
  });

  it('CSV: cells the header does not have, quotes out of place, a state its type cannot read, attributes that are not JSON', () => {
    const csv = [
      'name,type,state,attributes',
      'ok,text,x,',
      'short,text',
      '"closed" late,text,x,',
      'a "quote",text,x,',
      'lamp,switch,maybe,',
      'bad,text,x,{unit}',
      'untyped,,5,',
      'fine,sensor,5,',
      '"never closed,text,x,',
      'lost,text,x,',
    ].join('\r\n');
    const { rows, errors } = parseImportRows(csv, 'csv');
    expect(rows.map((row) => row.line)).toEqual([2, 9]);
    expect(errors).toEqual([
      { line: 3, message: '2 cells where the header has 4' },
      { line: 4, message: expect.stringMatching(/^cell 1: text after its closing quote/) },
      { line: 5, message: expect.stringMatching(/^cell 1: a quote in an unquoted cell/) },
      { line: 6, message: 'state: a switch takes on or off (true/false), not "maybe"' },
      { line: 7, message: 'attributes: not JSON: {unit}' },
      { line: 8, message: expect.stringMatching(/^a state needs the type/) },
      // The quote left open takes in the rest of the file: one error, at the line it opened.
      { line: 10, message: expect.stringMatching(/^a quoted cell is not closed/) },
    ]);
  });

  it('CSV: a header with an unknown or repeated column is refused at line 1, and no row is read', () => {
    expect(parseImportRows('name,type,stat\nA,text,x\n', 'csv')).toEqual({
      rows: [],
      errors: [{ line: 1, message: 'the header row names "stat"; the columns are id, name, type, state, tags, attributes, version' }],
    });
    expect(errorsOf('name,type,state,name\n', 'csv')).toEqual([{ line: 1, message: 'the header row names "name" twice' }]);
    expect(errorsOf('name,,state\n', 'csv')[0]!.message).toMatch(/an empty column/);
  });
});

describe('import rows: formats and batches', () => {
  it('knows the format by the file name, else by the first character', () => {
    expect(importFormatOf('rows.ndjson', 'a,b')).toBe('ndjson');
    expect(importFormatOf('rows.JSONL', '')).toBe('ndjson');
    expect(importFormatOf('export.csv', '{"name":1}')).toBe('csv');
    expect(importFormatOf('rows.txt', '\uFEFF  {"name":"x"}')).toBe('ndjson');
    expect(importFormatOf('-', 'name,type,state')).toBe('csv');
  });

  it('splits a list into batches of at most the size, in order, all full but the last', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 60 }), fc.integer({ min: 1, max: 25 }), (items, size) => {
        const batches = batchesOf(items, size);
        expect(batches.flat()).toEqual(items);
        expect(batches.slice(0, -1).every((batch) => batch.length === size)).toBe(true);
        expect(batches.every((batch) => batch.length >= 1 && batch.length <= size)).toBe(true);
      }),
    );
    expect(batchesOf(Array.from({ length: 2_500 }, (_, index) => index)).map((batch) => batch.length)).toEqual([
      BATCH_MAX_OPERATIONS,
      BATCH_MAX_OPERATIONS,
      500,
    ]);
    expect(() => batchesOf([1], 0)).toThrow(RangeError);
  });
});
