// The log destination (src/platform/log-destination.ts): lines of one turn of the event loop go out
// together, in order, as soon as the turn ends; a large batch goes at once; nothing is left behind
// on close; and a destination that cannot be written to drops lines rather than failing the server.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BatchedLogDestination } from '../../src/platform/log-destination.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('BatchedLogDestination', () => {
  let directory: string;
  let file: string;
  let fd: number;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'devdata-log-'));
    file = join(directory, 'log');
    fd = openSync(file, 'w');
  });

  afterEach(() => {
    closeSync(fd);
    rmSync(directory, { recursive: true, force: true });
  });

  const written = () => readFileSync(file, 'utf8');

  it('writes the lines of one turn together when the turn ends, in order', async () => {
    const destination = new BatchedLogDestination(fd);
    destination.write('{"n":1}\n');
    destination.write('{"n":2}\n');
    expect(written()).toBe('');
    await nextTurn();
    expect(written()).toBe('{"n":1}\n{"n":2}\n');
    // A line on its own, as from an idle server, is out by the end of its turn too.
    destination.write('{"n":3,"text":"ünïcödé"}\n');
    await nextTurn();
    expect(written()).toBe('{"n":1}\n{"n":2}\n{"n":3,"text":"ünïcödé"}\n');
    destination.close();
  });

  it('writes at once when a turn has piled up 64 KiB', () => {
    const destination = new BatchedLogDestination(fd);
    const line = `${JSON.stringify({ text: 'x'.repeat(1000) })}\n`;
    for (let index = 0; index < 70; index++) destination.write(line);
    expect(written().length).toBeGreaterThanOrEqual(64 * 1024);
    destination.close();
    expect(written()).toBe(line.repeat(70));
  });

  it('writes what is pending on close', () => {
    const destination = new BatchedLogDestination(fd);
    destination.write('{"msg":"shutting down"}\n');
    destination.close();
    expect(written()).toBe('{"msg":"shutting down"}\n');
  });

  it('drops lines it cannot write instead of throwing', async () => {
    const unwritable = openSync(join(directory, 'log'), 'r');
    const destination = new BatchedLogDestination(unwritable);
    destination.write('{"n":1}\n');
    expect(() => destination.close()).not.toThrow();
    closeSync(unwritable);
    await nextTurn();
  });
});
