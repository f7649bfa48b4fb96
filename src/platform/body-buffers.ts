// Hand-written (a free list per size class) because a measurement says so: large response bodies
// (event pages, lists) were each a fresh allocation, which glibc returns to the system and faults
// in again under load; reusing the buffers made the event-page rows far faster (bench/HISTORY.md,
// "Response bodies in reused buffers, and the write path"). A buffer goes back to its free list once the
// response has been handed to the operating system ('finish'); a response that never finishes
// leaves its buffer to the garbage collector.
import type { FastifyReply } from 'fastify';
import { type JsonParts, jsonPartsLength, spliceJson } from './json-body.js';
import { JSON_CONTENT_TYPE } from './schemas.js';

/** Smaller bodies come from Node's own buffer pool (slices of a shared 8 KiB slab). */
const SMALLEST_POOLED = Buffer.poolSize >>> 1;
const SMALLEST_CLASS = 8 * 1024;
/** Larger bodies are rare (a 1,000-event page is about 450 KB) and allocated each time. */
const LARGEST_CLASS = 4 * 1024 * 1024;
/** The most idle bytes kept for reuse, all classes together. */
export const IDLE_BODY_BYTES = 8 * 1024 * 1024;

export class BodyBuffers {
  private readonly free = new Map<number, Buffer[]>();
  private idleBytes = 0;

  constructor(private readonly idleBudget = IDLE_BODY_BYTES) {}

  /** A buffer of at least `length` bytes: one of its size class's idle ones, or a new one. */
  acquire(length: number): Buffer {
    const size = classOf(length);
    const buffer = this.free.get(size)?.pop();
    if (buffer) {
      this.idleBytes -= size;
      return buffer;
    }
    // Outside Node's pool: a buffer kept for reuse must not pin a shared slab.
    return Buffer.allocUnsafeSlow(size);
  }

  /** Gives back a buffer from `acquire` whose bytes nobody reads any more. */
  release(buffer: Buffer): void {
    if (this.idleBytes + buffer.length > this.idleBudget) return;
    let list = this.free.get(buffer.length);
    if (!list) {
      list = [];
      this.free.set(buffer.length, list);
    }
    list.push(buffer);
    this.idleBytes += buffer.length;
  }

  /** How many bytes wait idle for reuse (for tests). */
  get idle(): number {
    return this.idleBytes;
  }
}

function classOf(length: number): number {
  let size = SMALLEST_CLASS;
  while (size < length) size *= 2;
  return size;
}

const bodyBuffers = new BodyBuffers();

/** Sends `parts` as the JSON body, assembled in a reused buffer when it is large enough to need one. */
export function sendJsonParts(reply: FastifyReply, parts: JsonParts, buffers: BodyBuffers = bodyBuffers): FastifyReply {
  const length = jsonPartsLength(parts);
  reply.type(JSON_CONTENT_TYPE);
  if (length < SMALLEST_POOLED || length > LARGEST_CLASS) return reply.send(spliceJson(parts));
  const buffer = buffers.acquire(length);
  reply.raw.once('finish', () => buffers.release(buffer));
  return reply.send(spliceJson(parts, buffer.subarray(0, length)));
}
