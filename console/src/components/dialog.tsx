// A confirmation before something that cannot be undone, as a modal <dialog> (focus stays inside,
// Escape cancels).
import type { ComponentChildren, RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * Opens the <dialog> as a modal while the component is shown. It is removed rather than closed
 * when it goes, so focus goes back by hand to what had it before (the button that opened it),
 * as closing would have done, instead of to the page's body.
 */
export function useModal(dialog: RefObject<HTMLDialogElement | null>): void {
  useEffect(() => {
    const element = dialog.current;
    const opener = document.activeElement;
    if (element && !element.open) element.showModal();
    return () => {
      if (element?.open) element.close();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    };
  }, []);
}

export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useModal(dialog);
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
