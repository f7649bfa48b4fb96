import { Type } from 'typebox';

/** The `type` query filter of events and audit: an exact type, or a prefix written `custom.*`. */
export interface TypeFilter {
  value: string;
  prefix: boolean;
}

export function parseTypeFilter(raw: string | undefined): TypeFilter | undefined {
  if (raw === undefined || raw === '') return undefined;
  return raw.endsWith('.*') ? { value: raw.slice(0, -1), prefix: true } : { value: raw, prefix: false };
}

export function matchesTypeFilter(type: string, filter: TypeFilter | undefined): boolean {
  if (!filter) return true;
  return filter.prefix ? type.startsWith(filter.value) : type === filter.value;
}

/**
 * The `type` query parameter: the characters of event and audit types ([A-Za-z0-9_.:-], as in a
 * custom event type), with `*` only as a trailing `.*`. Anything else would match nothing and
 * silently answer an empty page (`resource*`), so the validator refuses it, in the description's words.
 */
export function typeFilterSchema(example: string) {
  return Type.String({
    minLength: 1,
    maxLength: 120,
    pattern: '^[A-Za-z0-9_.:-]+(\\.\\*)?$',
    description: `An exact type, or a prefix ending in \`.*\` such as \`${example}\`; letters, digits and _ . : - only (\`*\` only in a final \`.*\`)`,
  });
}
