// Log lines for people: `devdata serve` on a terminal (or LOG_FORMAT=pretty) turns each JSON line pino
// makes into one short line (time, level, message and fields; a request as method, URL, status, ms).
// Our own formatter rather than pino-pretty (a dozen packages) for the two shapes the service writes.
import type { LogFormatSetting } from '../config.js';

export type LogFormat = 'json' | 'pretty';

export interface LogOutput {
  format: LogFormat;
  /** ANSI colours: pretty lines on a terminal, unless NO_COLOR is set (no-color.org). */
  color: boolean;
}

export const JSON_LOG_OUTPUT: LogOutput = { format: 'json', color: false };

/** The message of the one line written for each response (app.ts), which pretty lines show as a request. */
export const ACCESS_LINE_MESSAGE = 'request completed';

/** JSON lines unless pretty ones are asked for, or LOG_FORMAT is left to decide and standard output is a terminal. */
export function chooseLogOutput(setting: LogFormatSetting, stdout: { isTTY?: boolean }, env: { NO_COLOR?: string }): LogOutput {
  const terminal = stdout.isTTY === true;
  const format = setting === 'auto' ? (terminal ? 'pretty' : 'json') : setting;
  return { format, color: format === 'pretty' && terminal && !env.NO_COLOR };
}

const RESET = '\x1b[0m';
const DIM = '2';
const LEVELS: Record<number, { label: string; color: string }> = {
  10: { label: 'TRACE', color: DIM },
  20: { label: 'DEBUG', color: DIM },
  30: { label: 'INFO', color: '32' },
  40: { label: 'WARN', color: '33' },
  50: { label: 'ERROR', color: '31' },
  60: { label: 'FATAL', color: '1;31' },
};
/** pino's own fields, shown in the line's head or not at all. */
const HEAD_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg']);
const ACCESS_FIELDS = new Set([...HEAD_FIELDS, 'requestId', 'method', 'url', 'statusCode', 'responseTimeMs']);

type Entry = Record<string, unknown>;
type Paint = (color: string, text: string) => string;

/**
 * Control characters (a request's URL, a message quoting input) are shown escaped, never sent to
 * the terminal, where an escape sequence could rewrite what the operator sees.
 */
function printable(text: string): string {
  return text.replace(/\p{Cc}/gu, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function clock(time: unknown): string {
  const date = typeof time === 'number' ? new Date(time) : new Date();
  const two = (value: number) => String(value).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

function fieldValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? printable(value) : printable(JSON.stringify(value));
  return printable(JSON.stringify(value) ?? String(value));
}

function fields(entry: Entry, shown: Set<string>): string {
  return Object.entries(entry)
    .filter(([name]) => !shown.has(name) && name !== 'err')
    .map(([name, value]) => ` ${printable(name)}=${fieldValue(value)}`)
    .join('');
}

function statusColor(status: number): string {
  return status >= 500 ? '31' : status >= 400 ? '33' : status >= 300 ? '36' : '32';
}

function isAccessLine(entry: Entry): boolean {
  return (
    entry.msg === ACCESS_LINE_MESSAGE &&
    typeof entry.method === 'string' &&
    typeof entry.url === 'string' &&
    typeof entry.statusCode === 'number' &&
    typeof entry.responseTimeMs === 'number'
  );
}

/** An error's stack (or message) below its line, indented. */
function errorLines(error: unknown): string {
  if (error === undefined || error === null) return '';
  const { stack, message } = error as { stack?: unknown; message?: unknown };
  const text = typeof stack === 'string' ? stack : typeof message === 'string' ? message : JSON.stringify(error);
  return text
    .split('\n')
    .map((line) => `\n    ${printable(line)}`)
    .join('');
}

/** One pino JSON line as one line for people (an error's stack follows it); anything else as it is. */
export function formatLogLine(line: string, color: boolean): string {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return line.endsWith('\n') ? line : `${line}\n`;
  const record = entry as Entry;
  const paint: Paint = color ? (code, text) => (text ? `\x1b[${code}m${text}${RESET}` : '') : (_code, text) => text;
  const level = LEVELS[record.level as number] ?? { label: printable(String(record.level ?? 'LOG')).toUpperCase(), color: DIM };
  const head = `${paint(DIM, clock(record.time))} ${paint(level.color, level.label.padEnd(5))}`;
  if (isAccessLine(record)) {
    const status = record.statusCode as number;
    const id = typeof record.requestId === 'string' ? `  ${paint(DIM, printable(record.requestId))}` : '';
    return `${head} ${printable(record.method as string)} ${printable(record.url as string)} ${paint(statusColor(status), String(status))} ${record.responseTimeMs} ms${fields(record, ACCESS_FIELDS)}${id}\n`;
  }
  const message = typeof record.msg === 'string' ? printable(record.msg) : '';
  return `${head} ${message}${paint(DIM, fields(record, HEAD_FIELDS))}${errorLines(record.err)}\n`;
}

/** pino's destination for people: each line formatted, then handed to the batched destination. */
export class PrettyLogLines {
  constructor(
    private readonly destination: { write(line: string): void },
    private readonly color: boolean,
  ) {}

  write(line: string): void {
    this.destination.write(formatLogLine(line, this.color));
  }
}
