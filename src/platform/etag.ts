// Entity tags in If-Match and If-None-Match (RFC 9110 §13.1), read in one place. Comparison is
// weak: `W/"3"`, `"3"` and, as the decisions allow for versions, a bare `3` name the same tag.

/** The tags a precondition header lists, without `W/` and quotes; `*` for any; undefined without one. */
export function listedEtags(header: string | undefined): '*' | string[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  return header.split(',').flatMap((part) => {
    const match = /^\s*(?:W\/)?"?([^",\s]*)"?\s*$/.exec(part);
    return match && match[1] !== '' ? [match[1]!] : [];
  });
}

/** Whether If-None-Match lists this tag (given quoted, as sent in ETag) or is `*`. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  const listed = listedEtags(header);
  return listed === '*' || listed?.includes(etag.replace(/^"|"$/g, '')) === true;
}
