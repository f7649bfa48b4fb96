import { describe, expect, it } from 'vitest';
import { jsonPartsLength, ownBytes, PACKED_CHUNK_MAX, PackedBytes, spliceJson } from '../../src/platform/json-body.js';

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

describe('PackedBytes', () => {
  // Texts of every length up to past a chunk's quarter, ASCII and not, in one sequence: each must
  // come back byte for byte, however the chunks fell.
  const alphabet = ['a', 'é', '°', '🌡', '"', '\\'];
  const texts = Array.from({ length: 400 }, (_, index) => {
    const length = index < 300 ? index * 7 : PACKED_CHUNK_MAX / 4 - 10 + (index - 300) * 3;
    let text = '';
    for (let at = 0; text.length < length; at++) text += alphabet[(index + at) % alphabet.length];
    return text;
  });

  it('gives each text its UTF-8 bytes, exactly, whatever chunk it falls in', () => {
    const packed = new PackedBytes();
    const kept = texts.map((text) => packed.bytes(text));
    // Read after every write: a later text must not overwrite an earlier one's bytes.
    expect(kept.map((bytes) => bytes.toString('utf8'))).toEqual(texts);
    expect(kept.map((bytes) => bytes.length)).toEqual(texts.map((text) => Buffer.byteLength(text)));
  });

  it('packs small texts into shared chunks that grow to the largest size, and gives a large one a buffer of its own', () => {
    const packed = new PackedBytes();
    const small = Array.from({ length: 2000 }, (_, index) => packed.bytes(`{"id":${index},"type":"resource.updated"}`));
    const chunks = new Set(small.map((bytes) => bytes.buffer));
    // 2,000 texts of about 40 bytes (80 KB) in chunks of 1, 2, 4 … 64 KiB: at most eight.
    expect(chunks.size).toBeLessThanOrEqual(8);
    expect([...chunks].map((chunk) => chunk.byteLength)).toEqual(
      [1, 2, 4, 8, 16, 32, 64]
        .map((kib) => kib * 1024)
        .slice(0, chunks.size - 1)
        .concat(PACKED_CHUNK_MAX),
    );
    const large = packed.bytes('x'.repeat(PACKED_CHUNK_MAX / 4 + 1));
    expect(large.buffer.byteLength).toBe(PACKED_CHUNK_MAX / 4 + 1);
    expect(chunks.has(large.buffer)).toBe(false);
  });
});
