// The SSE receivers, in their own process (forked by bench/run.ts): opens N streams, timestamps
// every chunk the moment it arrives, and computes write-to-receipt latency from the `sentAt` the
// writer put in the event (Date.now() on the same machine). It counts each stream's messages, so
// a lost, repeated or reordered message shows up in the report.
//
// Parsing is deferred out of the socket callbacks: a fan-out makes hundreds of sockets readable at
// once, and parsing each before reading the next would add the receiver's own work to the later
// streams' latency.
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { isMessage, type BenchEventData, type CollectCommand, type CollectedReport, type OpenCommand, type OpenedReport } from './protocol.js';
import { summarize } from './stats.js';

interface Stream {
  index: number;
  request: ClientRequest;
  response?: IncomingMessage;
  buffer: string;
  /** seq → received, for the seqs of this run. */
  seen: Uint8Array;
  lastId: number;
  ended: boolean;
}

interface Chunk {
  stream: Stream;
  at: number;
  text: string;
}

let command: OpenCommand | undefined;
const streams: Stream[] = [];
let latencies = new Float64Array(1024);
let latencyCount = 0;
let duplicates = 0;
let outOfOrder = 0;
let firstReceipt = Number.POSITIVE_INFINITY;
let lastReceipt = 0;
let queue: Chunk[] = [];
let scheduled = false;

function send(message: OpenedReport | CollectedReport): void {
  process.send?.(message);
}

function recordLatency(value: number): void {
  if (latencyCount === latencies.length) {
    const grown = new Float64Array(latencies.length * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[latencyCount++] = value;
}

function handleMessage(stream: Stream, block: string, at: number): void {
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(line.startsWith('data: ') ? 6 : 5);
  }
  if (data === '') return; // a comment (keep-alive) or a message without data
  let event: { id?: unknown; data?: Partial<BenchEventData> };
  try {
    event = JSON.parse(data) as typeof event;
  } catch {
    return;
  }
  const payload = event.data;
  if (!command || !payload || payload.run !== command.run || typeof payload.seq !== 'number' || typeof payload.sentAt !== 'number') return;
  const id = Number(event.id);
  if (id <= stream.lastId) outOfOrder++;
  stream.lastId = Math.max(stream.lastId, id);
  if (payload.seq < 0 || payload.seq >= stream.seen.length) return;
  if (stream.seen[payload.seq] === 1) {
    duplicates++;
    return;
  }
  stream.seen[payload.seq] = 1;
  recordLatency(at - payload.sentAt);
  if (at < firstReceipt) firstReceipt = at;
  if (at > lastReceipt) lastReceipt = at;
}

function processQueue(): void {
  scheduled = false;
  const chunks = queue;
  queue = [];
  for (const { stream, at, text } of chunks) {
    stream.buffer += text;
    for (let end = stream.buffer.indexOf('\n\n'); end !== -1; end = stream.buffer.indexOf('\n\n')) {
      const block = stream.buffer.slice(0, end);
      stream.buffer = stream.buffer.slice(end + 2);
      handleMessage(stream, block.replace(/\r/g, ''), at);
    }
  }
}

function onChunk(stream: Stream, text: string): void {
  queue.push({ stream, at: Date.now(), text });
  if (!scheduled) {
    scheduled = true;
    setImmediate(processQueue);
  }
}

function openOne(open: OpenCommand, index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = new URL(open.url);
    const stream: Stream = { index, buffer: '', seen: new Uint8Array(open.planned), lastId: 0, ended: false } as Stream;
    const timer = setTimeout(() => {
      req.destroy(new Error(`no response within ${open.openTimeoutMs} ms`));
    }, open.openTimeoutMs);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: 'GET',
        agent: false,
        headers: { accept: 'text/event-stream', ...open.headers },
      },
      (response) => {
        clearTimeout(timer);
        if (response.statusCode !== 200) {
          response.resume();
          reject(new Error(`HTTP ${response.statusCode}`));
          return;
        }
        stream.response = response;
        response.setEncoding('utf8');
        response.on('data', (text: string) => onChunk(stream, text));
        response.on('end', () => (stream.ended = true));
        response.on('error', () => (stream.ended = true));
        response.on('close', () => (stream.ended = true));
        streams.push(stream);
        resolve();
      },
    );
    stream.request = req;
    req.on('error', (error) => {
      clearTimeout(timer);
      stream.ended = true;
      reject(error);
    });
    req.end();
  });
}

async function openAll(open: OpenCommand): Promise<void> {
  command = open;
  const started = Date.now();
  const failures: string[] = [];
  let next = 0;
  let opened = 0;
  const worker = async () => {
    while (next < open.streams) {
      const index = next++;
      try {
        await openOne(open, index);
        opened++;
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, open.openConcurrency) }, worker));
  send({ type: 'opened', opened, failed: failures.length, failures: [...new Set(failures)].slice(0, 5), ms: Date.now() - started });
}

function missing(written: number[]): number {
  let lost = 0;
  for (const stream of streams) for (const seq of written) if (stream.seen[seq] !== 1) lost++;
  return lost;
}

async function collect(collectCommand: CollectCommand): Promise<void> {
  const started = Date.now();
  // Late messages may still be in flight: wait until every stream has every written seq, or time out.
  while (Date.now() - started < collectCommand.drainTimeoutMs) {
    processQueue();
    if (missing(collectCommand.written) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  processQueue();
  let lost = 0;
  let streamsWithLoss = 0;
  let delivered = 0;
  for (const stream of streams) {
    let streamLost = 0;
    for (const seq of collectCommand.written) if (stream.seen[seq] !== 1) streamLost++;
    for (const flag of stream.seen) delivered += flag;
    lost += streamLost;
    if (streamLost > 0) streamsWithLoss++;
  }
  const latency = summarize(latencies.subarray(0, latencyCount));
  send({
    type: 'collected',
    streams: streams.length,
    delivered,
    expected: streams.length * collectCommand.written.length,
    lost,
    streamsWithLoss,
    duplicates,
    outOfOrder,
    endedEarly: streams.filter((stream) => stream.ended).length,
    latencyMs: latency,
    spanMs: latencyCount > 0 ? lastReceipt - firstReceipt : 0,
    waitedMs: Date.now() - started,
  });
}

function closeAll(): void {
  for (const stream of streams) stream.request.destroy();
  process.exit(0);
}

process.on('message', (message: unknown) => {
  if (isMessage<OpenCommand>('open')(message)) void openAll(message);
  else if (isMessage<CollectCommand>('collect')(message)) void collect(message);
  else if (typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'close') closeAll();
});
// The benchmark is gone: nothing left to report to.
process.on('disconnect', () => process.exit(0));
