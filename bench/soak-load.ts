// The soak's load: PATCH and the readers at fixed rates over staggered autocannon instances, what each records a minute, and its 100 streams.
import { join } from 'node:path';
import autocannon from 'autocannon';
import { forkTracked, nextMessage, sleep } from './children.js';
import { cannonOptions } from './http-rows.js';
import type { HttpSpec } from './http-specs.js';
import { isMessage, type OpenedReport } from './protocol.js';
import { log } from './results.js';
import { HERE, ROOT, type Launched } from './server.js';

/**
 * The PATCH load's share of the capacity measured just before with the readers and streams beside
 * it. Beside them PATCH's closed loop loses a good share of what it does alone on this machine's two
 * cores, so 80% of the closed loop alone kept the server fully busy (bench/HISTORY.md, "Long runs").
 */
export const LOAD_SHARE = 0.8;
/** Readers, requests/s over GET of a resource, a list page and an event page near the head, in turn. */
export const READER_RATE = 300;
export const READER_CONNECTIONS = 10;
export const SOAK_STREAMS = 100;
/** The soak's streams follow only these custom events (their own writer): with every PATCH event they would carry 100× the write rate, a fan-out benchmark of its own. */
const STREAM_TYPE = 'custom.bench';
export const STREAM_EVENTS_PER_SECOND = 10;
/**
 * autocannon spends a rate as a quota per connection per second, all connections from the same
 * instant: one instance sends each second's requests in a burst. Several instances started a
 * tenth of a second apart spread them over the second.
 */
const PHASES = 10;

export interface Window {
  latencies: number[];
  errors: number;
}

/** What one load records: responses in the current minute, and 2xx responses overall. */
export class Recorder {
  private window: Window = { latencies: [], errors: 0 };
  recording = false;
  ok = 0;

  response(status: number, ms: number): void {
    if (status >= 200 && status < 300) this.ok++;
    if (!this.recording) return;
    if (status >= 200 && status < 300) this.window.latencies.push(ms);
    else this.window.errors++;
  }

  error(): void {
    if (this.recording) this.window.errors++;
  }

  /** The minute just ended; the next one starts empty. */
  take(): Window {
    const taken = this.window;
    this.window = { latencies: [], errors: 0 };
    return taken;
  }
}

/** A fixed-rate load of `PHASES` autocannon instances started a tenth of a second apart, until stopped. */
export async function fixedRate(spec: HttpSpec, rate: number, connections: number, maxSeconds: number, recorder: Recorder): Promise<{ stop(): Promise<void> }> {
  let counter = 0;
  const next = () => counter++;
  const phases = Math.max(1, Math.min(PHASES, Math.floor(rate)));
  const instances: Array<{ instance: autocannon.Instance; done: Promise<void> }> = [];
  for (let phase = 0; phase < phases; phase++) {
    const phaseRate = Math.floor(rate / phases) + (phase < Math.round(rate) % phases ? 1 : 0);
    const opts = cannonOptions(spec, { connections: Math.max(1, Math.round(connections / phases)), duration: maxSeconds, overallRate: phaseRate }, next);
    let instance!: autocannon.Instance;
    const done = new Promise<void>((resolvePromise, reject) => {
      instance = autocannon(opts, (error: unknown) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolvePromise()));
    });
    instance.on('response', (_client, status, _bytes, ms) => recorder.response(status, ms));
    instance.on('reqError', () => recorder.error());
    instances.push({ instance, done });
    await sleep(1000 / phases);
  }
  return {
    async stop() {
      for (const { instance } of instances) instance.stop();
      await Promise.all(instances.map(({ done }) => done));
    },
  };
}

/** The 100 streams of the soak, open in a receivers child for its whole length. */
export async function openStreams(launched: Launched, planned: number, run: string) {
  const receivers = forkTracked(join(HERE, 'sse-receivers.js'), [], { cwd: ROOT, execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  receivers.send({
    type: 'open',
    url: `${launched.server.origin}/api/v1/events/stream?type=${STREAM_TYPE}`,
    headers: launched.auth,
    streams: SOAK_STREAMS,
    run,
    planned,
    openConcurrency: 50,
    openTimeoutMs: 15_000,
  });
  const opened = await nextMessage(receivers, isMessage<OpenedReport>('opened'), 60_000, `opening ${SOAK_STREAMS} streams`);
  if (opened.failed > 0) log(`soak: ${opened.failed} of ${SOAK_STREAMS} streams failed to open: ${opened.failures.join('; ')}`);
  return { receivers, opened };
}

/** The account's newest event id: the one a stream opened without a cursor names first (`id: N`). */
export async function newestEventId(origin: string, headers: Record<string, string>): Promise<number> {
  const stopped = new AbortController();
  const response = await fetch(`${origin}/api/v1/events/stream`, { headers, signal: stopped.signal });
  if (!response.ok || !response.body) throw new Error(`GET /api/v1/events/stream: ${response.status}`);
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of response.body) {
      text += decoder.decode(chunk, { stream: true });
      const found = /^id: (\d+)$/m.exec(text);
      if (found) return Number(found[1]);
    }
  } finally {
    stopped.abort();
  }
  throw new Error('the stream ended before naming its first id');
}
