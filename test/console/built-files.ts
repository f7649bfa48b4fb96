// The console as the build left it (console/dist, made by npm run build before the tests run):
// what the page loads first, read from its index.html.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { consoleDirectory } from '../../src/paths.js';

export const CONSOLE_DIST = consoleDirectory();

export function consoleIndexHtml(): string {
  return readFileSync(join(CONSOLE_DIST, 'index.html'), 'utf8');
}

/** Every attribute value of the tags of a kind, e.g. the `src` of each `<script>`. */
export function attributeValues(html: string, tag: string, attribute: string): string[] {
  const values: string[] = [];
  for (const element of html.matchAll(new RegExp(`<${tag}\\b[^>]*>`, 'gi'))) {
    const value = new RegExp(`\\s${attribute}="([^"]*)"`, 'i').exec(element[0])?.[1];
    if (value !== undefined) values.push(value);
  }
  return values;
}

/** The JavaScript a first visit loads: the entry scripts and the modules the page preloads with them. */
export function firstLoadScripts(html = consoleIndexHtml()): string[] {
  const preloads = [...html.matchAll(/<link\b[^>]*rel="modulepreload"[^>]*>/gi)].map((match) => /href="([^"]+)"/.exec(match[0])?.[1] as string);
  return [...attributeValues(html, 'script', 'src'), ...preloads];
}

/** A URL the page uses (`/console/assets/…`) as a file of the build. */
export function builtFile(url: string): Buffer {
  return readFileSync(join(CONSOLE_DIST, url.replace(/^\/console\//, '')));
}
