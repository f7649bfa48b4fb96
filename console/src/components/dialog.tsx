// A confirmation before something that cannot be undone, as a modal <dialog> (focus stays inside,
// Escape cancels).
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
  }, []);
  return (
    <dialog
      ref={dialog}
      class="confirm"
      aria-labelledby="confirm-title"
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div class="actions">
        <button type="button" class="danger" disabled={props.busy} aria-busy={props.busy} onClick={props.onConfirm}>
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel} autofocus>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
