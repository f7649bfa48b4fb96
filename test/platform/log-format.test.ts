// Log lines for people (src/platform/log-format.ts): which form `devdata serve` writes, and how a
// pino JSON line reads as one line for people. A spawned server checks them end to end
// (test/system/serve-terminal.e2e.test.ts).
import fc from 'fast-check';
import { type Logger, pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ACCESS_LINE_MESSAGE, chooseLogOutput, formatLogLine, PrettyLogLines } from '../../src/platform/log-format.js';

const ESC = String.fromCharCode(27);
const CLOCK = String.raw`\d{2}:\d{2}:\d{2}\.\d{3}`;

/** The lines a real pino logger writes through the formatter. */
function prettyLogger(color = false): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino({ level: 'trace' }, new PrettyLogLines({ write: (line) => lines.push(line) }, color));
  return { log, lines };
}

describe('chooseLogOutput', () => {
  it('is JSON unless asked for pretty lines, or left to decide with standard output a terminal; colour only on a terminal without NO_COLOR', () => {
    const cases = [
      { setting: 'auto', tty: true, noColor: undefined, expected: { format: 'pretty', color: true } },
      { setting: 'auto', tty: true, noColor: '1', expected: { format: 'pretty', color: false } },
      { setting: 'auto', tty: false, noColor: undefined, expected: { format: 'json', color: false } },
      { setting: 'auto', tty: undefined, noColor: undefined, expected: { format: 'json', color: false } },
      { setting: 'json', tty: true, noColor: undefined, expected: { format: 'json', color: false } },
      { setting: 'json', tty: false, noColor: undefined, expected: { format: 'json', color: false } },
      { setting: 'pretty', tty: false, noColor: undefined, expected: { format: 'pretty', color: false } },
      { setting: 'pretty', tty: true, noColor: undefined, expected: { format: 'pretty', color: true } },
      { setting: 'pretty', tty: true, noColor: '', expected: { format: 'pretty', color: true } },
    ] as const;
    for (const { setting, tty, noColor, expected } of cases) {
      expect(chooseLogOutput(setting, { isTTY: tty }, { NO_COLOR: noColor }), `${setting} tty=${tty} NO_COLOR=${noColor}`).toEqual(expected);
    }
  });
});

describe('formatLogLine', () => {
  it('shows a request as time, level, method, URL, status, milliseconds and request id, for any of them', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        fc.webPath(),
        fc.integer({ min: 100, max: 599 }),
        fc.float({ min: 0, max: 100_000, noNaN: true }).map((ms) => Math.round(ms * 10) / 10),
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,40}$/),
        (method, path, status, ms, requestId) => {
          const url = path || '/';
          const { log, lines } = prettyLogger();
          log.info({ requestId, method, url, statusCode: status, responseTimeMs: ms }, ACCESS_LINE_MESSAGE);
          expect(lines).toHaveLength(1);
          expect(lines[0]).toBe(`${lines[0]!.slice(0, 12)} INFO  ${method} ${url} ${status} ${ms} ms  ${requestId}\n`);
          expect(lines[0]).toMatch(new RegExp(`^${CLOCK} `));
        },
      ),
    );
  });

  it('shows the time of the line in local time', () => {
    const time = new Date(2026, 0, 2, 3, 4, 5, 67).getTime();
    expect(formatLogLine(JSON.stringify({ level: 30, time, msg: 'hello' }), false)).toBe('03:04:05.067 INFO  hello\n');
  });

  it('shows any other line as its level, message and fields; an error with its stack below it', () => {
    const { log, lines } = prettyLogger();
    log.warn({ secretsKeyFile: '/var/lib/devdata/secrets.key', sealed: 3, migrations: ['0001_a', '0002_b'], note: 'two words' }, 'a warning');
    log.error({ err: new Error('it broke') }, 'shutdown failed');
    log.debug('quiet');
    log.fatal('gone');
    expect(lines[0]).toMatch(
      new RegExp(`^${CLOCK} WARN  a warning secretsKeyFile=/var/lib/devdata/secrets.key sealed=3 migrations=\\["0001_a","0002_b"\\] note="two words"\\n$`),
    );
    const [first, second, ...rest] = lines[1]!.split('\n');
    expect(first).toMatch(new RegExp(`^${CLOCK} ERROR shutdown failed$`));
    expect(second).toBe('    Error: it broke');
    expect(rest.some((line) => /^ {8}at /.test(line))).toBe(true);
    expect(lines[2]).toMatch(new RegExp(`^${CLOCK} DEBUG quiet\\n$`));
    expect(lines[3]).toMatch(new RegExp(`^${CLOCK} FATAL gone\\n$`));
  });

  it('never sends a control character of a logged value to the terminal, and writes one line per entry', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.webPath(), (message, value, path) => {
        const { log, lines } = prettyLogger(true);
        log.info({ field: value }, message);
        log.info({ requestId: value, method: 'GET', url: `${path}${message}`, statusCode: 200, responseTimeMs: 1 }, ACCESS_LINE_MESSAGE);
        for (const line of lines) {
          expect(line.endsWith('\n')).toBe(true);
          const body = line.slice(0, -1);
          // Only the formatter's own colour codes remain once they are taken out.
          const withoutColour = body.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '');
          expect(withoutColour).not.toMatch(/\p{Cc}/u);
        }
      }),
    );
  });

  it('colours the level and the status on a terminal', () => {
    const { log, lines } = prettyLogger(true);
    log.info({ requestId: 'r1', method: 'GET', url: '/x', statusCode: 503, responseTimeMs: 2 }, ACCESS_LINE_MESSAGE);
    log.warn('careful');
    expect(lines[0]).toContain(`${ESC}[32mINFO ${ESC}[0m GET /x ${ESC}[31m503${ESC}[0m 2 ms`);
    expect(lines[1]).toContain(`${ESC}[33mWARN ${ESC}[0m careful`);
  });

  it('passes anything that is not a JSON object through as it is', () => {
    for (const line of ['not json', '[1,2]', '"text"', 'null']) expect(formatLogLine(`${line}\n`, false)).toBe(`${line}\n`);
    expect(formatLogLine('plain', false)).toBe('plain\n');
  });
});
