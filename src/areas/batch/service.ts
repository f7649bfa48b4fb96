// A batch of writes (api-decisions §12): every operation checked before anything is written, then
// all of them in one write of the account, in order, one event each, or none when one fails.
// Runs of creations, of updates and of publications go to their areas together: on PostgreSQL
// each run is then one statement with its events.
import { DomainError, type ErrorDetail } from '../../domain-errors.js';
import type { AccountWrite, AccountWrites } from '../../account-writes/pipeline.js';
import type { ResourcesService, Resource, ResourceUpdate } from '../resources/service.js';
import type { EventsService, Event } from '../events/service.js';
import { customDataProblem } from '../events/event.js';
import type { OutcomeRecord } from '../../storage/transaction.js';
import type { BatchOperation } from './schemas.js';

/** The most invalid operations a refused batch lists. */
export const MAX_INVALID_LISTED = 10;

export type BatchResult =
  | { op: 'create'; status: 201; resource: Resource }
  | { op: 'update'; status: 200; resource: Resource }
  | { op: 'delete'; status: 204 }
  | { op: 'publish'; status: 201; event: Event };

export interface BatchOutcome {
  results: BatchResult[];
  /** The last event the batch wrote. */
  cursor: number;
}

type Create = Extract<BatchOperation, { op: 'create' }>;
type Update = Extract<BatchOperation, { op: 'update' }>;
type Publish = Extract<BatchOperation, { op: 'publish' }>;

export class BatchService {
  constructor(
    private readonly writes: AccountWrites,
    private readonly resources: ResourcesService,
    private readonly events: EventsService,
  ) {}

  async run(accountId: string, operations: readonly BatchOperation[], outcome?: OutcomeRecord): Promise<BatchOutcome> {
    this.check(operations);
    return this.writes.transaction(
      accountId,
      async (write) => {
        const results: BatchResult[] = [];
        for (let start = 0; start < operations.length; ) {
          const { op } = operations[start]!;
          let end = start + 1;
          if (op !== 'delete') while (end < operations.length && operations[end]!.op === op) end++;
          await this.runOperations(write, operations, start, end, results);
          start = end;
        }
        return { results, cursor: write.lastEventId };
      },
      outcome,
    );
  }

  /** Refuses a batch with invalid operations before a write starts, listing them (at most MAX_INVALID_LISTED). */
  private check(operations: readonly BatchOperation[]): void {
    const details: ErrorDetail[] = [];
    let invalid = 0;
    for (const [index, operation] of operations.entries()) {
      const found = problemsOf(operation, this.resources);
      if (found.length === 0) continue;
      details.push(...found.map((detail) => ({ ...detail, index, path: `/operations/${index}${detail.path}` })));
      if (++invalid === MAX_INVALID_LISTED) break;
    }
    if (details.length > 0) {
      const first = details[0]!;
      const more = invalid > 1 ? ` (and ${invalid - 1} more operation${invalid > 2 ? 's' : ''})` : '';
      throw new DomainError('invalid_request', `${first.path.slice(1)} ${first.message}${more}`, details);
    }
  }

  /** Operations [start, end) of one kind, their results appended; throws the first refusal as the batch's. */
  private async runOperations(write: AccountWrite, operations: readonly BatchOperation[], start: number, end: number, results: BatchResult[]): Promise<void> {
    const first = operations[start]!;
    switch (first.op) {
      case 'create': {
        // Checked before the write began: a run of creations cannot be refused.
        const inputs = (operations.slice(start, end) as Create[]).map(({ op: _op, ...input }) => input);
        for (const resource of await this.resources.within.createAll(write, inputs)) results.push({ op: 'create', status: 201, resource });
        return;
      }
      case 'delete':
        await failingAt(start, this.resources.within.delete(write, first.id, first.ifMatch === undefined ? undefined : [first.ifMatch]));
        results.push({ op: 'delete', status: 204 });
        return;
      case 'update': {
        const updates = (operations.slice(start, end) as Update[]).map(
          ({ op: _op, id, ifMatch, ...input }): ResourceUpdate => ({
            id,
            input,
            precondition: ifMatch === undefined ? undefined : [ifMatch],
          }),
        );
        const outcomes = await this.resources.within.update(write, updates);
        for (const [offset, outcome] of outcomes.entries()) {
          if ('error' in outcome) throw operationFailed(start + offset, outcome.error);
          results.push({ op: 'update', status: 200, resource: outcome.value });
        }
        return;
      }
      case 'publish': {
        const published = await this.events.publishWithin(write, operations.slice(start, end) as Publish[]);
        for (const event of published) results.push({ op: 'publish', status: 201, event });
        return;
      }
    }
  }
}

/** What is wrong with an operation whatever the account holds: its fields, as its own route would refuse them. */
function problemsOf(operation: BatchOperation, resources: ResourcesService): ErrorDetail[] {
  try {
    switch (operation.op) {
      case 'create': {
        const { op: _op, ...input } = operation;
        resources.checkCreate(input);
        break;
      }
      case 'update': {
        const { op: _op, id: _id, ifMatch: _ifMatch, ...input } = operation;
        resources.checkUpdate(input);
        break;
      }
      case 'publish': {
        const problem = customDataProblem(operation.data);
        if (problem) return [{ path: '/data', message: problem }];
        break;
      }
      case 'delete':
        break;
    }
  } catch (error) {
    if (error instanceof DomainError && error.code === 'invalid_request') return error.details ?? [{ path: '', message: error.message }];
    throw error;
  }
  return [];
}

async function failingAt<T>(index: number, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw operationFailed(index, error);
  }
}

/** A refusal of operation `index` as the batch's: its code and message, its details pointing into the operation. */
function operationFailed(index: number, error: unknown): unknown {
  if (!(error instanceof DomainError)) return error;
  const details = (error.details?.length ? error.details : [{ path: '', message: error.message }]).map((detail) => ({
    ...detail,
    index,
    path: `/operations/${index}${detail.path}`,
  }));
  return new DomainError(error.code, `Operation ${index}: ${error.message}`, details, error.facts);
}
