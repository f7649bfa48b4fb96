// What a request may make the service do, whatever its size: how deep its JSON may nest, how much
// of a validation failure is worked out and reported, and how large an error body may grow.
// Decided in docs/decisions.md, "HTTP contract".

/** The deepest a JSON body may nest objects and arrays; the body itself is level 1. */
export const MAX_JSON_DEPTH = 32;

/** A failing body up to this size has every failing field listed; a larger one only its first. */
export const FULL_VALIDATION_MAX_BYTES = 16 * 1024;

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

/**
 * Whether JSON text nests deeper than `limit`, found by a scan of the text before it is parsed:
 * serializing or walking a value nested thousands deep overflows the stack. Text that is not JSON
 * is left for the parser to refuse.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  // Each level needs at least two characters, so short bodies cannot be too deep.
  if (text.length <= limit * 2) return false;
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** `text` cut to `limit` UTF-16 units, marked with an ellipsis when cut. */
export function truncated(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit - 1;
  // Never keep half of a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}
