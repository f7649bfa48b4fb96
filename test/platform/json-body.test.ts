import { describe, expect, it } from 'vitest';
import { jsonPartsLength, ownBytes, spliceJson } from '../../src/platform/json-body.js';

describe('spliceJson', () => {
  it('joins the items with commas between a head and a tail, byte for byte as JSON.stringify would', () => {
    const items = [{ id: 1, unit: '°C' }, { id: 2, name: 'Küche 🌡' }, { id: 3 }];
    const parts = { head: '{"données":[', items: items.map((item) => ownBytes(JSON.stringify(item))), tail: '],"hasMore":false}' };
    const expected = JSON.stringify({ données: items, hasMore: false });
    expect(spliceJson(parts).toString('utf8')).toBe(expected);
    expect(jsonPartsLength(parts)).toBe(Buffer.byteLength(expected));
  });

  it('makes an empty list and a single item without stray commas', () => {
    expect(spliceJson({ head: '[', items: [], tail: ']' }).toString()).toBe('[]');
    expect(spliceJson({ head: '[', items: [ownBytes('"é"')], tail: ']' }).toString()).toBe('["é"]');
  });

  it('writes into a given buffer of exactly the length, whatever it held before', () => {
    const parts = { head: '{"a":[', items: [ownBytes('1'), ownBytes('"ü"')], tail: ']}' };
    const into = Buffer.alloc(jsonPartsLength(parts), 0x7a);
    expect(spliceJson(parts, into)).toBe(into);
    expect(into.toString()).toBe('{"a":[1,"ü"]}');
  });
});
