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
