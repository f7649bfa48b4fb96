import type { Clock } from '../../platform/clock.js';
import { API_VERSION } from '../../platform/api-version.js';
import type { Storage } from '../../storage/database.js';

const STORAGE_CHECK_TIMEOUT_MS = 2000;

export interface StorageCheck {
  status: 'ok' | 'error';
  latencyMs: number;
}

/** Reports on something running in the background, for the status body. */
export type WorkerReporter = () => Record<string, unknown>;

export class SystemService {
  private readonly startedAt: Date;
  private readonly workers = new Map<string, WorkerReporter>();

  constructor(
    private readonly storage: Storage,
    clock: Clock,
  ) {
    this.startedAt = clock.now();
  }

  registerWorker(name: string, reporter: WorkerReporter): void {
    this.workers.set(name, reporter);
  }

  /** A real read of a storage table, bounded in time so a hung database reports instead of hanging. */
  async checkStorage(): Promise<StorageCheck> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.storage.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('storage check timed out')), STORAGE_CHECK_TIMEOUT_MS);
        }),
      ]);
      return { status: 'ok', latencyMs: Math.round((performance.now() - started) * 100) / 100 };
    } catch {
      return { status: 'error', latencyMs: Math.round((performance.now() - started) * 100) / 100 };
    } finally {
      clearTimeout(timer);
    }
  }

  async status() {
    const storage = await this.checkStorage();
    const ready = storage.status === 'ok';
    return {
      status: ready ? ('ok' as const) : ('degraded' as const),
      ready,
      version: API_VERSION,
      uptimeSeconds: Math.floor(process.uptime()),
      startedAt: this.startedAt.toISOString(),
      checks: { storage },
      workers: Object.fromEntries([...this.workers].map(([name, report]) => [name, report()])),
    };
  }
}
