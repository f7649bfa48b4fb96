// CSV as RFC 4180 has it: records of cells separated by commas, a cell with a comma, a quote or a
// line break in quotes with its quotes doubled. Records end at CRLF, LF or CR; each is numbered by
// the line it starts on, so that a message about it names the line an editor shows.

export type CsvRecord = { line: number; cells: string[] } | { line: number; error: string };

/** Every record of the text, a malformed one as an error naming its line (reading goes on at the next record). */
export function* csvRecords(text: string): Generator<CsvRecord> {
  let index = 0;
  let line = 1;
  while (index < text.length) {
    const start = line;
    const cells: string[] = [];
    let error: string | undefined;
    for (;;) {
      // One cell, from `index`.
      let cell = '';
      if (text[index] === '"') {
        index++;
        for (;;) {
          const quote = text.indexOf('"', index);
          if (quote === -1) {
            error ??= 'a quoted cell is not closed (a quote inside a cell is written twice: "")';
            line += lineBreaks(text, index, text.length);
            index = text.length;
            break;
          }
          line += lineBreaks(text, index, quote);
          cell += text.slice(index, quote);
          index = quote + 1;
          if (text[index] !== '"') break;
          cell += '"';
          index++;
        }
        if (index < text.length && text[index] !== ',' && text[index] !== '\n' && text[index] !== '\r') {
          error ??= `cell ${cells.length + 1}: text after its closing quote (a quote inside a quoted cell is written twice: "")`;
        }
      }
      const end = nextDelimiter(text, index);
      const rest = text.slice(index, end);
      if (rest.includes('"')) error ??= `cell ${cells.length + 1}: a quote in an unquoted cell (quote the cell and write the quote twice: "")`;
      cell += rest;
      cells.push(cell);
      index = end;
      if (text[index] === ',') {
        index++;
        continue;
      }
      // The end of the record: a line break or the end of the text.
      if (text[index] === '\r' && text[index + 1] === '\n') index++;
      if (index < text.length) {
        index++;
        line++;
      }
      break;
    }
    yield error === undefined ? { line: start, cells } : { line: start, error };
  }
}

/** Where the unquoted cell at `from` ends: the next comma, quote-free line break, or the end. */
function nextDelimiter(text: string, from: number): number {
  for (let index = from; index < text.length; index++) {
    const char = text[index];
    if (char === ',' || char === '\n' || char === '\r') return index;
  }
  return text.length;
}

/** Line breaks between `from` and `to` (CRLF counted once). */
function lineBreaks(text: string, from: number, to: number): number {
  let count = 0;
  for (let index = from; index < to; index++) {
    if (text[index] === '\n') count++;
    else if (text[index] === '\r' && text[index + 1] !== '\n') count++;
  }
  return count;
}

/** A cell as written: quoted when it holds a comma, a quote or a line break, or begins or ends with a space. */
export function csvCell(value: string): string {
  return /[",\r\n]|^\s|\s$/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A record as written, with the CRLF RFC 4180 ends it with. */
export function csvLine(cells: readonly string[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
