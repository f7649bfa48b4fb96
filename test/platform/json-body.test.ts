import { describe, expect, it } from 'vitest';
import { ownBytes, spliceJson } from '../../src/platform/json-body.js';

describe('spliceJson', () => {
  it('joins the items with commas between a head and a tail, byte for byte as JSON.stringify would', () => {
    const items = [{ id: 1, unit: '°C' }, { id: 2, name: 'Küche 🌡' }, { id: 3 }];
    const body = spliceJson(
      '{"données":[',
      items.map((item) => ownBytes(JSON.stringify(item))),
      '],"hasMore":false}',
    );
    expect(body.toString('utf8')).toBe(JSON.stringify({ données: items, hasMore: false }));
    expect(body.length).toBe(Buffer.byteLength(JSON.stringify({ données: items, hasMore: false })));
  });

  it('makes an empty list and a single item without stray commas', () => {
    expect(spliceJson('[', [], ']').toString()).toBe('[]');
    expect(spliceJson('[', [ownBytes('"é"')], ']').toString()).toBe('["é"]');
  });
});
