// What a request may make the service do, whatever its size: how deep its JSON may nest, how much
// of a validation failure is worked out and reported, and how large an error body may grow.
// Decided in docs/decisions.md, "HTTP contract".

/** The largest request body of the API (echo and published events allow less). */
export const BODY_LIMIT = 1024 * 1024;

/** The deepest a JSON body may nest objects and arrays; the body itself is level 1. */
export const MAX_JSON_DEPTH = 32;

/** A failing body up to this size has every failing field listed; a larger one only its first. */
export const FULL_VALIDATION_MAX_BYTES = 16 * 1024;

/**
 * The longest path segment the router hands on as a parameter; a longer one is refused before any
 * route (400 without details). Far above what ids need, so that a long id meets its schema's bound
 * (100) and is told which parameter and why.
 */
export const MAX_PATH_PARAMETER_LENGTH = 1024;

/** The most `details` an error body lists. */
export const MAX_ERROR_DETAILS = 10;

/** The longest a message, or a string inside a detail, may be in an error body (UTF-16 units). */
export const MAX_ERROR_MESSAGE_LENGTH = 1000;
export const MAX_ERROR_DETAIL_STRING_LENGTH = 200;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Why JSON text is refused before it is parsed, if it is. */
export type JsonTextProblem = 'too_deep' | 'nul';

/**
 * What is wrong with JSON text, found by one scan before it is parsed: a value nested thousands
 * deep overflows the stack of whatever serializes or walks it, and the NUL character (`\u0000`)
 * cannot be stored by PostgreSQL, so the service refuses it everywhere alike. Text that is not
 * JSON is left for the parser to refuse.
 */
export function jsonTextProblem(text: string, depthLimit: number): JsonTextProblem | undefined {
  let depth = 0;
  let inString = false;
  let nul = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) {
        if (text.startsWith('u0000', index + 1)) nul = true;
        index++;
      } else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      if (++depth > depthLimit) return 'too_deep';
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      depth--;
    }
  }
  return nul ? 'nul' : undefined;
}

/** The JSON pointer of the first key or string holding a NUL in a parsed value (nested at most MAX_JSON_DEPTH). */
export function nulPath(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path || '/' : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const itemPath = `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (key.includes('\u0000')) return itemPath;
    const found = nulPath(item, itemPath);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Whether URL-encoded text (a request target, a form body) holds an encoded or raw NUL. */
export function urlEncodedNul(text: string): boolean {
  return text.includes('%00') || text.includes('\u0000');
}

export const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';

/** `text` cut to `limit` UTF-16 units, marked with an ellipsis when cut. */
export function truncated(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit - 1;
  // Never keep half of a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}
