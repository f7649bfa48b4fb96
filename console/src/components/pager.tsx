// Paging for a list read by offset: previous and next page, and the page's number.

export function Pager({
  offset,
  count,
  hasMore,
  pageSize,
  onChange,
}: {
  offset: number;
  count: number;
  hasMore: boolean;
  pageSize: number;
  onChange: (offset: number) => void;
}) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - pageSize))}>
        Previous page
      </button>
      <span>Page {Math.floor(offset / pageSize) + 1}</span>
      <button type="button" class="secondary" disabled={!hasMore} onClick={() => onChange(offset + count)}>
        Next page
      </button>
    </nav>
  );
}
