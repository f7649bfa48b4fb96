// Response bodies spliced from JSON the service already holds, as UTF-8 bytes. Encoding text to
// UTF-8 on every response was a large share of an event page's CPU (a page with a non-ASCII
// character takes V8's slow path; bench/HISTORY.md, "Figures the code's comments refer to"); JSON
// kept in memory is encoded once instead.

/** `text` as UTF-8 in a buffer of its own: kept long in memory, it must not pin a shared pool slab. */
export function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/** The largest chunk PackedBytes allocates; a text over a quarter of it gets a buffer of its own. */
export const PACKED_CHUNK_MAX = 64 * 1024;
const PACKED_CHUNK_MIN = 1024;

/**
 * UTF-8 bytes of texts kept in memory and dropped oldest first (an account's newest events), packed
 * into shared chunks. A buffer of its own for each one was an ArrayBuffer and a malloc'd backing
 * store each, thousands a second under steady writes: V8's full collections spent milliseconds of
 * their pause sweeping them, and the malloc heap held on to the memory they freed (bench/HISTORY.md,
 * "Long runs"). A chunk lives while any text in it is referenced, so a user that drops its texts
 * oldest first pins at most two chunks beyond them: the oldest, partly dropped, and the current one,
 * partly filled (a text's `buffer` is its chunk). Chunks start small and double up to PACKED_CHUNK_MAX.
 */
export class PackedBytes {
  private chunk: Buffer | undefined;
  private used = 0;

  bytes(text: string): Buffer {
    const length = Buffer.byteLength(text);
    if (length > PACKED_CHUNK_MAX / 4) return ownBytes(text);
    let chunk = this.chunk;
    if (!chunk || this.used + length > chunk.length) {
      const size = chunk ? Math.min(PACKED_CHUNK_MAX, 2 * chunk.length) : PACKED_CHUNK_MIN;
      chunk = this.chunk = Buffer.allocUnsafeSlow(Math.max(size, length));
      this.used = 0;
    }
    const bytes = chunk.subarray(this.used, this.used + length);
    bytes.write(text);
    this.used += length;
    return bytes;
  }
}

/** A copy of `bytes` in a buffer of its own, for bytes that came from a shared pool and are kept long. */
export function ownCopy(bytes: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}

const COMMA = 0x2c;

/**
 * A JSON body in parts: `head`, then the items separated by commas, then `tail`. Services answer
 * with parts; the route assembles them once, into a buffer of the HTTP layer's choosing
 * (`sendJsonParts` in platform/body-buffers.ts).
 */
export interface JsonParts {
  head: string;
  items: readonly Buffer[];
  tail: string;
}

/** The assembled body's size in bytes. */
export function jsonPartsLength(parts: JsonParts): number {
  let length = Buffer.byteLength(parts.head) + Buffer.byteLength(parts.tail) + Math.max(0, parts.items.length - 1);
  for (const item of parts.items) length += item.length;
  return length;
}

/** The parts as one JSON body, copied once into `into` (exactly `jsonPartsLength` bytes) or a new buffer. */
export function spliceJson(parts: JsonParts, into: Buffer = Buffer.allocUnsafe(jsonPartsLength(parts))): Buffer {
  const { items } = parts;
  let offset = into.write(parts.head);
  for (let index = 0; index < items.length; index++) {
    if (index > 0) into[offset++] = COMMA;
    const item = items[index] as Buffer;
    into.set(item, offset);
    offset += item.length;
  }
  into.write(parts.tail, offset);
  return into;
}
