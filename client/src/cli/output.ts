// What devdata-client prints: one JSON document with --json, else aligned tables and labelled
// details for people, coloured only on a terminal.
import { formatState } from '../display.js';

export type Style = 'bold' | 'dim' | 'green' | 'yellow' | 'red';

const SGR: Record<Style, [number, number]> = { bold: [1, 22], dim: [2, 22], green: [32, 39], yellow: [33, 39], red: [31, 39] };

export interface Output {
  json: boolean;
  /** Colours on standard output: a terminal, no NO_COLOR, no --no-color. */
  colour: boolean;
  out(line: string): void;
  err(line: string): void;
}

/** Colour is for a person at a terminal: never in a pipe or a file, never when NO_COLOR is set (no-color.org). */
export function wantsColour(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, stdout: { isTTY?: boolean } = process.stdout): boolean {
  return stdout.isTTY === true && !env.NO_COLOR && !argv.includes('--no-color');
}

export function paint(output: Output, style: Style | undefined, text: string): string {
  if (!output.colour || style === undefined || text === '') return text;
  const [on, off] = SGR[style];
  return `\u001b[${on}m${text}\u001b[${off}m`;
}

/** A table cell: text, or text with a style. */
export type Cell = string | { text: string; style: Style | undefined };

/** A state as the console shows it: on/off for a switch or binary sensor, the value otherwise. */
export function stateCell(state: unknown): Cell {
  return { text: formatState(state), style: state === true ? 'green' : state === false ? 'dim' : undefined };
}

const textOf = (cell: Cell) => (typeof cell === 'string' ? cell : cell.text);

/** Columns padded to their widest cell (the last one left as is), the header in bold. */
export function printTable(output: Output, header: string[], rows: Cell[][]): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => textOf(row[column] ?? '').length)));
  const line = (row: Cell[], header = false) =>
    row
      .map((cell, column) => {
        const text = textOf(cell);
        const padding = column === row.length - 1 ? '' : ' '.repeat(widths[column]! - text.length);
        return paint(output, header ? 'bold' : typeof cell === 'string' ? undefined : cell.style, text) + padding;
      })
      .join('  ')
      .trimEnd();
  output.out(line(header, true));
  for (const row of rows) output.out(line(row));
}

/** `Label:  value` lines, the labels aligned; an undefined value leaves its line out. */
export function printDetails(output: Output, pairs: Array<[string, Cell | undefined]>): void {
  const shown = pairs.filter((pair): pair is [string, Cell] => pair[1] !== undefined);
  const width = Math.max(...shown.map(([label]) => label.length)) + 1;
  for (const [label, cell] of shown)
    output.out(`${paint(output, 'bold', `${label}:`.padEnd(width))}  ${paint(output, typeof cell === 'string' ? undefined : cell.style, textOf(cell))}`);
}

/** --json: the API's JSON, one document; otherwise what `human` prints. */
export function print(output: Output, json: unknown, human: () => void): void {
  if (output.json) output.out(JSON.stringify(json));
  else human();
}

/** Times as the API gives them (ISO 8601 UTC), or a word for none. */
export function time(value: string | null | undefined, none = '-'): string {
  return value ?? none;
}

/** A list in a cell: "a, b", or "-" for none. */
export function list(values: readonly string[]): string {
  return values.length > 0 ? values.join(', ') : '-';
}

/** Green when all is well, yellow when paused or waiting, red when it failed or was stopped. */
export function statusStyle(status: string): Style {
  if (/^(active|enabled|done|succeeded|on)$/.test(status)) return 'green';
  if (/^(paused|pending)$/.test(status)) return 'yellow';
  return 'red';
}
