// Every list of the console: a table where the content is wide, a card per row where it is narrow
// (a phone), so a row's name, its main value and its actions are always in view without scrolling
// sideways. A page describes its columns once; this decides how they are laid out.
import { type ComponentChildren, Fragment, type JSX } from 'preact';
import { useId } from 'preact/hooks';
import { useNarrow } from '../narrow';

export interface Column<Row> {
  /** The column's heading; in a card, the label before the value. */
  label: string;
  /**
   * What the column is to a row: `name` names it (the row's header; a card's title), `value` is
   * what a reader comes for (a state, a type, an outcome; beside the title in a card), `actions`
   * its buttons (at a card's foot), `detail` the rest (label and value lines in a card).
   */
  role?: 'name' | 'value' | 'actions' | 'detail';
  cell: (row: Row) => ComponentChildren;
  /** A class for the cell (e.g. `state`, so the state is found alike in both layouts). */
  class?: string;
  /** A `value` whose label a card shows too (a bare number says nothing by itself). */
  labelInCard?: boolean;
}

/** Attributes of a row's element (a `tr` or an `li`): `data-*` names for tests and links, a class. */
export type RowAttributes = { class?: string; id?: string } & Record<`data-${string}`, string>;

/**
 * What a row opens to (a delivery's attempts), or nothing while it is closed: the whole width under
 * the row in a table, the foot of its card. The button that opens it names it (aria-controls).
 */
export type RowDetail<Row> = (row: Row) => ComponentChildren;

export function DataList<Row>({
  caption,
  columns,
  rows,
  rowKey,
  rowAttributes,
  empty,
  class: className,
  detail,
}: {
  caption: ComponentChildren;
  columns: Column<Row>[];
  rows: readonly Row[];
  rowKey: (row: Row) => string | number;
  rowAttributes?: (row: Row) => RowAttributes;
  /** What an empty list says. */
  empty: ComponentChildren;
  class?: string;
  detail?: RowDetail<Row>;
}) {
  const narrow = useNarrow();
  const captionId = useId();
  if (narrow) return <CardList {...{ caption, captionId, columns, rows, rowKey, rowAttributes, empty, className, detail }} />;
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class={className}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.label} scope="col">
                {column.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 && (
            <tr>
              <td colSpan={columns.length} class="empty">
                {empty}
              </td>
            </tr>
          )}
          {rows.map((row) => {
            const opened = detail?.(row);
            return (
              <Fragment key={rowKey(row)}>
                <tr {...rowAttributes?.(row)}>
                  {columns.map((column) =>
                    column.role === 'name' ? (
                      <th key={column.label} scope="row" class={column.class}>
                        {column.cell(row)}
                      </th>
                    ) : (
                      <td key={column.label} class={column.class}>
                        {column.role === 'actions' ? <div class="row-actions">{column.cell(row)}</div> : column.cell(row)}
                      </td>
                    ),
                  )}
                </tr>
                {isShown(opened) && (
                  <tr class="row-detail">
                    <td colSpan={columns.length}>{opened}</td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function CardList<Row>({
  caption,
  captionId,
  columns,
  rows,
  rowKey,
  rowAttributes,
  empty,
  className,
  detail,
}: {
  caption: ComponentChildren;
  captionId: string;
  columns: Column<Row>[];
  rows: readonly Row[];
  rowKey: (row: Row) => string | number;
  rowAttributes?: (row: Row) => RowAttributes;
  empty: ComponentChildren;
  className: string | undefined;
  detail: RowDetail<Row> | undefined;
}) {
  const of = (role: NonNullable<Column<Row>['role']>) => columns.filter((column) => (column.role ?? 'detail') === role);
  const [names, values, details, actions] = [of('name'), of('value'), of('detail'), of('actions')];
  return (
    <div class={joinClasses('card-list', className)}>
      <p class="card-list-caption" id={captionId}>
        {caption}
      </p>
      {rows.length === 0 ? (
        <p class="empty">{empty}</p>
      ) : (
        <ul class="row-cards" aria-labelledby={captionId}>
          {rows.map((row) => {
            const attributes = rowAttributes?.(row);
            const opened = detail?.(row);
            return (
              <li key={rowKey(row)} {...attributes} class={joinClasses('row-card', attributes?.class)}>
                <div class="row-card-head">
                  {names.map((column) => (
                    <div key={column.label} class={joinClasses('row-card-name', column.class)}>
                      {column.cell(row)}
                    </div>
                  ))}
                  {values.map((column) => (
                    <div key={column.label} class={joinClasses('row-card-value', column.class)}>
                      <span class={column.labelInCard ? 'row-card-label' : 'visually-hidden'}>{column.label} </span>
                      {column.cell(row)}
                    </div>
                  ))}
                </div>
                {details.length > 0 && (
                  <dl class="row-card-facts">
                    {details.map((column) => (
                      <Fact key={column.label} label={column.label}>
                        {column.cell(row)}
                      </Fact>
                    ))}
                  </dl>
                )}
                {actions.map((column) => {
                  const content = column.cell(row);
                  return content === false || content == null ? null : (
                    <div key={column.label} class={joinClasses('row-card-actions', column.class)}>
                      {content}
                    </div>
                  );
                })}
                {isShown(opened) && <div class="row-card-detail">{opened}</div>}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

function Fact({ label, children }: { label: string; children: ComponentChildren }): JSX.Element {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}

/** Whether a cell's content shows anything (not false, null or undefined). */
function isShown(content: ComponentChildren): boolean {
  return content !== false && content !== null && content !== undefined;
}

function joinClasses(...classes: Array<string | undefined>): string | undefined {
  const joined = classes.filter(Boolean).join(' ');
  return joined === '' ? undefined : joined;
}
