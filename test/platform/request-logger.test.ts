import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChildLogger } from '../../src/platform/request-logger.js';

function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      callback();
    },
  });
  return { root: pino({ level }, stream), lines };
}

describe('lazyChildLogger', () => {
  it('logs through a child bound to the request id, made on first use only', () => {
    const { root, lines } = capture();
    const child = vi.spyOn(root, 'child');
    const log = lazyChildLogger(root, { requestId: 'req_1' }, {});
    expect(child).not.toHaveBeenCalled();
    log.info({ step: 1 }, 'first');
    log.warn('second %s', 'formatted');
    log.error(new Error('boom'));
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map(({ requestId, msg, step }) => ({ requestId, msg, step }))).toEqual([
      { requestId: 'req_1', msg: 'first', step: 1 },
      { requestId: 'req_1', msg: 'second formatted', step: undefined },
      { requestId: 'req_1', msg: 'boom', step: undefined },
    ]);
    expect(lines[2]).toMatchObject({ err: { type: 'Error', message: 'boom' } });
  });

  it('makes no child for a level that is off, and follows the level it is given', () => {
    const { root, lines } = capture('info');
    const child = vi.spyOn(root, 'child');
    const log = lazyChildLogger(root, { requestId: 'req_2' }, {});
    log.debug('hidden');
    log.trace('hidden');
    expect(child).not.toHaveBeenCalled();
    expect(log.level).toBe('info');
    log.level = 'debug';
    log.debug('shown');
    expect(lines).toMatchObject([{ requestId: 'req_2', msg: 'shown', level: 20 }]);
    expect(root.level).toBe('info');
  });

  it('hands out grandchildren with both bindings', () => {
    const { root, lines } = capture();
    lazyChildLogger(root, { requestId: 'req_3' }, {}).child({ streamId: 's1' }).info('nested');
    expect(lines).toMatchObject([{ requestId: 'req_3', streamId: 's1', msg: 'nested' }]);
  });
});
