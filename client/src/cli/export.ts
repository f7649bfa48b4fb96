// devdata-client resources export: every resource (of a type, with tags) a page at a time, as the
// NDJSON or CSV that resources import reads back (import-rows.ts writes both).
import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { csvHeader, type ExportOptions, exportLine, importFormatOf } from '../import-rows.js';
import type { CommandInput } from './command.js';
import { formatValue } from './import.js';
import { type Output, print } from './output.js';
import { resourceTypeValue, stringValue } from './values.js';

/** The most a page of the resource list holds: the fewest requests. */
const PAGE = 500;

/** Writes text, waiting while the sink's buffer is full (a slow pipe). */
export async function write(sink: Writable, text: string): Promise<void> {
  if (!sink.write(text)) await once(sink, 'drain');
}

export async function exportResources({ values, client }: CommandInput, output: Output): Promise<void> {
  const file = stringValue(values, 'output');
  // Without --format the file's name says it; else (or to standard output) NDJSON.
  const format = formatValue(values) ?? (file === undefined ? 'ndjson' : importFormatOf(file, '{'));
  const type = resourceTypeValue(values, 'type');
  const tag = values.tag as string[] | undefined;
  const options: ExportOptions = { withoutIds: values['no-ids'] === true };
  const devdata = client();
  // A file is written beside its name and renamed at the end: a failure leaves no half an export under it.
  const partial = file === undefined ? undefined : `${file}.partial`;
  const sink: Writable = partial === undefined ? process.stdout : createWriteStream(partial);
  let exported = 0;
  try {
    if (format === 'csv') await write(sink, csvHeader(options));
    let lines = '';
    for await (const resource of devdata.iterateResources({ ...(type && { type }), ...(tag && { tag }), limit: PAGE })) {
      lines += exportLine(resource, format, options);
      exported++;
      if (exported % PAGE === 0) {
        await write(sink, lines);
        lines = '';
      }
    }
    await write(sink, lines);
    if (partial !== undefined) {
      sink.end();
      await once(sink, 'finish');
      renameSync(partial, file!);
    }
  } catch (error) {
    if (partial !== undefined) {
      sink.destroy();
      rmSync(partial, { force: true });
    }
    throw error;
  }
  const report = { exported, format, ...(file !== undefined && { file }) };
  // The data on standard output leaves the summary to standard error.
  if (file === undefined) output.err(`Exported ${exported} resources.`);
  else print(output, report, () => output.out(`Exported ${exported} resources to ${file} (${format}).`));
}
