// The webhook receiver of the benchmark's webhook rows, in its own process (forked by bench/run.ts):
// a bare node:http server that answers every POST 200 at once (with `?answer=N`, a body of N bytes),
// keeping the receipt time, the path, the headers and the raw body. Parsing and signature checks
// wait for the collect command, so the receiver's own work never adds to the measured latency.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import './watchdog.js';
import { isMessage, type BenchEventData, type Listening, type WebhookCollectCommand, type WebhookCollectedReport } from './protocol.js';
import { summarize } from './stats.js';

interface Receipt {
  at: number;
  path: string;
  replay: boolean;
  signature: string;
  body: string;
}

const answers = new Map<number, Buffer>();
function answerOf(url: string): Buffer {
  const bytes = Number(/[?&]answer=(\d+)/.exec(url)?.[1] ?? 0);
  const answer = answers.get(bytes) ?? Buffer.alloc(bytes, 'x');
  answers.set(bytes, answer);
  return answer;
}

const receipts: Receipt[] = [];

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const at = Date.now();
    const answer = answerOf(request.url ?? '');
    response.writeHead(200, { 'content-length': String(answer.length) }).end(answer);
    receipts.push({
      at,
      path: (request.url ?? '').replace(/\?.*$/, ''),
      replay: request.headers['x-service-replay'] === 'true',
      signature: String(request.headers['x-service-signature'] ?? ''),
      body: Buffer.concat(chunks).toString('utf8'),
    });
  });
});

function verified(receipt: Receipt, secret: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(receipt.signature);
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(`${match[1]}.${receipt.body}`).digest();
  return timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'));
}

function seqOf(receipt: Receipt, run: string): BenchEventData | undefined {
  try {
    const data = (JSON.parse(receipt.body) as { data?: Partial<BenchEventData> }).data;
    return data?.run === run && typeof data.seq === 'number' && typeof data.sentAt === 'number' ? (data as BenchEventData) : undefined;
  } catch {
    return undefined;
  }
}

async function collect(command: WebhookCollectCommand): Promise<WebhookCollectedReport> {
  const started = Date.now();
  const secrets = new Map(command.hooks.map((hook) => [hook.path, hook.secret]));
  const wanted = new Set(command.written);
  const expected = wanted.size * command.hooks.length;
  const counted = (receipt: Receipt) => receipt.replay === command.replay && secrets.has(receipt.path);
  const keyOf = (receipt: Receipt, seq: number) => `${receipt.path} ${seq}`;
  const received = () => {
    const keys = new Set<string>();
    for (const receipt of receipts) {
      const seq = counted(receipt) ? seqOf(receipt, command.run)?.seq : undefined;
      if (seq !== undefined && wanted.has(seq)) keys.add(keyOf(receipt, seq));
    }
    return keys.size;
  };
  while (received() < expected && Date.now() - started < command.drainTimeoutMs) await new Promise((resolve) => setTimeout(resolve, 50));
  const seen = new Set<string>();
  const latencies: number[] = [];
  let duplicates = 0;
  let badSignatures = 0;
  let firstSent = command.startedAt ?? Number.POSITIVE_INFINITY;
  let lastReceipt = 0;
  for (const receipt of receipts) {
    const data = counted(receipt) ? seqOf(receipt, command.run) : undefined;
    if (!data || !wanted.has(data.seq)) continue;
    if (!verified(receipt, secrets.get(receipt.path)!)) badSignatures++;
    const key = keyOf(receipt, data.seq);
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    seen.add(key);
    const from = command.startedAt ?? data.sentAt;
    latencies.push(receipt.at - from);
    firstSent = Math.min(firstSent, from);
    lastReceipt = Math.max(lastReceipt, receipt.at);
  }
  return {
    type: 'webhook-collected',
    delivered: seen.size,
    expected,
    lost: expected - seen.size,
    duplicates,
    badSignatures,
    latencyMs: summarize(Float64Array.from(latencies)),
    spanMs: seen.size > 0 ? lastReceipt - firstSent : 0,
    waitedMs: Date.now() - started,
  };
}

process.on('message', (message: unknown) => {
  if (isMessage<WebhookCollectCommand>('webhook-collect')(message)) void collect(message).then((report) => process.send?.(report));
});

server.listen(0, '127.0.0.1', () => {
  const message: Listening = { type: 'listening', port: (server.address() as AddressInfo).port };
  process.send?.(message);
});

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
