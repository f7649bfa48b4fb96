// Response bodies spliced from JSON the service already holds, as UTF-8 bytes. Encoding text to
// UTF-8 on every response was a fifth of an event page's CPU (a page with a non-ASCII character
// takes V8's slow path; figures in bench/README.md); JSON kept in memory is encoded once instead.

/** `text` as UTF-8 in a buffer of its own: kept long in memory, it must not pin a shared pool slab. */
export function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/** A copy of `bytes` in a buffer of its own, for bytes that came from a shared pool and are kept long. */
export function ownCopy(bytes: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}

const COMMA = 0x2c;

/** `head`, then the items separated by commas, then `tail`: one JSON body, copied once into its place. */
export function spliceJson(head: string, items: readonly Buffer[], tail: string): Buffer {
  let length = Buffer.byteLength(head) + Buffer.byteLength(tail) + Math.max(0, items.length - 1);
  for (const item of items) length += item.length;
  const body = Buffer.allocUnsafe(length);
  let offset = body.write(head);
  for (let index = 0; index < items.length; index++) {
    if (index > 0) body[offset++] = COMMA;
    const item = items[index] as Buffer;
    body.set(item, offset);
    offset += item.length;
  }
  body.write(tail, offset);
  return body;
}
