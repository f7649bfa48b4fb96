// A secret the API shows once (a key, a webhook's signing secret, an app's client secret), with a
// copy button; and copying any text.
import { useState } from 'preact/hooks';

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | undefined>(undefined);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy}>
        {label}
      </button>
      <span role="status" class="copy-status">
        {copied === 'yes' ? 'Copied' : copied === 'failed' ? 'Copying is not allowed here: select the text and copy it' : ''}
      </span>
    </span>
  );
}

export function SecretOnce({ title, secret, explanation, onDone }: { title: string; secret: string; explanation: string; onDone: () => void }) {
  return (
    <section class="secret-once" aria-labelledby="secret-once-title">
      <h3 id="secret-once-title">{title}</h3>
      <p>{explanation} It is shown only now: store it before you close this.</p>
      <div class="secret-row">
        <label class="visually-hidden" for="secret-once-value">
          {title}
        </label>
        <input id="secret-once-value" class="secret-value" readOnly value={secret} onFocus={(event) => event.currentTarget.select()} />
        <CopyButton text={secret} label="Copy" />
      </div>
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}
