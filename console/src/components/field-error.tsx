// The API's refusal beside the field it names: a `details[].path` of the error marks that field's
// control (aria-invalid) and shows the message under it, which the control names as its
// description (aria-describedby). Every form uses these two, so every field says what is wrong
// with it where it is; the form's ErrorNotice still says it all above the buttons.
import { describeProblem } from '../errors';

/** The messages the error gives for `path` or anything inside it (`/tags` holds `/tags/0`). */
export function fieldMessages(error: unknown, path: string): string[] {
  if (error === undefined || error === null) return [];
  return describeProblem(error)
    .details.filter((detail) => detail.path === path || detail.path.startsWith(`${path}/`))
    .map((detail) => detail.message);
}

const messageId = (id: string) => `${id}-error`;

/**
 * The attributes of the control for the field at `path`: `aria-invalid` when the error names it,
 * and its message added to what already describes it (`describedBy`, a hint's id).
 */
export function fieldProps(error: unknown, path: string, id: string, describedBy?: string): { 'aria-invalid'?: true; 'aria-describedby'?: string } {
  if (fieldMessages(error, path).length === 0) return describedBy ? { 'aria-describedby': describedBy } : {};
  return { 'aria-invalid': true, 'aria-describedby': describedBy ? `${describedBy} ${messageId(id)}` : messageId(id) };
}

/** For a group of controls (a fieldset of checkboxes): the message added to its description; a group takes no aria-invalid. */
export function fieldGroupProps(error: unknown, path: string, id: string, describedBy?: string): { 'aria-describedby'?: string } {
  const { 'aria-describedby': described } = fieldProps(error, path, id, describedBy);
  return described ? { 'aria-describedby': described } : {};
}

/** The message under the field at `path`, when the error names it; `id` is its control's (or its group's). */
export function FieldError({ error, path, id }: { error: unknown; path: string; id: string }) {
  const messages = fieldMessages(error, path);
  if (messages.length === 0) return null;
  return (
    <p class="field-problem" id={messageId(id)}>
      {messages.join('; ')}
    </p>
  );
}
