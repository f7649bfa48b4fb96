// HTTP/1.1 over a plain socket, for requests no client library would send: raw bytes in the path,
// broken encodings, hostile headers. Resolves with the whole response, or with `reset` when the
// connection ended before one arrived; a stream (text/event-stream) or a HEAD resolves at its head.
import { connect } from 'node:net';

export interface RawRequest {
  method: string;
  /** Sent as is on the request line. */
  target: string;
  headers: Array<[string, string]>;
  body?: Buffer;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type RawOutcome = { kind: 'response'; response: RawResponse } | { kind: 'reset'; error: string };

function decodeChunked(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Parses a complete response, or undefined while it is not complete yet. */
function parse(data: Buffer, ended: boolean, headOnly: boolean): RawResponse | undefined {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] = headers[name] === undefined ? line.slice(colon + 1).trim() : `${headers[name]}, ${line.slice(colon + 1).trim()}`;
  }
  const rest = data.subarray(headEnd + 4);
  if (headOnly || status === 204 || status === 304 || headers['content-type']?.startsWith('text/event-stream'))
    return { status, headers, body: Buffer.alloc(0) };
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return rest.length >= length ? { status, headers, body: rest.subarray(0, length) } : undefined;
  }
  if (headers['transfer-encoding']?.includes('chunked')) {
    return rest.includes('\r\n0\r\n\r\n') || rest.subarray(0, 5).toString() === '0\r\n\r\n' ? { status, headers, body: decodeChunked(rest) } : undefined;
  }
  return ended ? { status, headers, body: rest } : undefined;
}

export function rawRequest(port: number, request: RawRequest, timeoutMs = 15_000): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (outcome: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => settle({ kind: 'reset', error: `no complete response within ${timeoutMs} ms` }), timeoutMs);
    const check = (ended: boolean) => {
      const response = parse(Buffer.concat(chunks), ended, request.method === 'HEAD');
      if (response) settle({ kind: 'response', response });
      else if (ended) settle({ kind: 'reset', error: `connection ended after ${Buffer.concat(chunks).length} bytes of response` });
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      check(false);
    });
    socket.on('end', () => check(true));
    socket.on('close', () => check(true));
    // A server may answer (413, say) and close before the whole body is sent: what counts is the answer.
    socket.on('error', () => check(true));
    // Kept alive, as real clients do: the answer is complete when its length says so, and the
    // socket is closed here. (With Connection: close a server that answers before reading the
    // body closes on unread data, and the kernel resets the connection: no client sends that.)
    const head = [`${request.method} ${request.target} HTTP/1.1`, 'Host: 127.0.0.1'];
    for (const [name, value] of request.headers) head.push(`${name}: ${value}`);
    if (request.body !== undefined) head.push(`Content-Length: ${request.body.length}`);
    socket.write(Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'));
    if (request.body !== undefined) socket.write(request.body);
  });
}
