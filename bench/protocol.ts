// IPC messages between the benchmark (bench/run.ts) and its children.

export interface Listening {
  type: 'listening';
  port: number;
}

/** What every benchmark event carries in `data`: the writer's clock at the write, for latency. */
export interface BenchEventData {
  run: string;
  seq: number;
  sentAt: number;
  [key: string]: unknown;
}

/** run → receivers: open `streams` SSE connections to `url` and report when all are open. */
export interface OpenCommand {
  type: 'open';
  url: string;
  headers: Record<string, string>;
  streams: number;
  run: string;
  /** Highest seq the writer may send, plus one (sizes the per-stream bookkeeping). */
  planned: number;
  openConcurrency: number;
  openTimeoutMs: number;
}

export interface OpenedReport {
  type: 'opened';
  opened: number;
  failed: number;
  failures: string[];
  ms: number;
}

/** run → receivers: the writer is done; wait for these seqs on every stream, then report. */
export interface CollectCommand {
  type: 'collect';
  written: number[];
  drainTimeoutMs: number;
}

export interface CollectedReport {
  type: 'collected';
  streams: number;
  /** Messages of this run received, counting each (stream, seq) once. */
  delivered: number;
  /** streams × written seqs. */
  expected: number;
  /** Written seqs a stream never received. */
  lost: number;
  /** Streams that missed at least one message. */
  streamsWithLoss: number;
  /** Messages received twice, or with an id not above the stream's previous one. */
  duplicates: number;
  outOfOrder: number;
  /** Streams the server ended before the collection. */
  endedEarly: number;
  latencyMs: { count: number; p50: number; p90: number; p99: number; max: number; mean: number };
  /** First receipt to last receipt of the run's messages, for the delivered rate. */
  spanMs: number;
  waitedMs: number;
}

export function isMessage<T extends { type: string }>(type: T['type']) {
  return (message: unknown): message is T => typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}

/** run → webhook receiver: the writer is done; wait for these seqs, check every signature, report. */
export interface WebhookCollectCommand {
  type: 'webhook-collect';
  run: string;
  written: number[];
  /** Each webhook's receiver path and signing secret (to verify each delivery after the run, not on the hot path). */
  hooks: Array<{ path: string; secret: string }>;
  /** Count replayed deliveries (X-Service-Replay) instead of live ones. */
  replay: boolean;
  /** When given (a replay's request), latency and span run from it instead of each event's `sentAt`. */
  startedAt?: number;
  drainTimeoutMs: number;
}

export interface WebhookCollectedReport {
  type: 'webhook-collected';
  /** Written seqs received by each webhook, each counted once. */
  delivered: number;
  expected: number;
  lost: number;
  /** Deliveries of a seq already received (the service delivers at least once; here it should be once). */
  duplicates: number;
  /** Deliveries whose X-Service-Signature does not verify over the received body. */
  badSignatures: number;
  /** Publish (`sentAt`, the writer's clock) to receipt (the receiver's), same machine. */
  latencyMs: { count: number; p50: number; p90: number; p99: number; max: number; mean: number };
  /** First publish of the run to its last receipt. */
  spanMs: number;
  waitedMs: number;
}
