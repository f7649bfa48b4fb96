// Choosing scopes for a new key or app: only those the connected key holds can be given.
import { useConnection } from '../connection-context';
import { SCOPES, type Scope } from '../scopes';
import { FieldError, fieldGroupProps } from './field-error';

export function ScopePicker({
  legend,
  offered,
  chosen,
  onChange,
  idPrefix,
  problem,
  error,
}: {
  legend: string;
  offered: readonly Scope[];
  chosen: Set<Scope>;
  onChange: (chosen: Set<Scope>) => void;
  idPrefix: string;
  /** Why the choice cannot be sent as it is (shown under the boxes). */
  problem?: string;
  /** A failure of the API whose details may name `/scopes`, shown under the boxes too. */
  error?: unknown;
}) {
  const { key } = useConnection();
  const held = new Set(key?.credential.credential.scopes ?? []);
  const toggle = (scope: Scope, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(scope);
    else next.delete(scope);
    onChange(next);
  };
  return (
    <fieldset class="field scope-picker" {...fieldGroupProps(error, '/scopes', idPrefix, problem ? `${idPrefix}-problem` : undefined)}>
      <legend>{legend}</legend>
      <ul>
        {offered.map((scope) => {
          const allowed = held.has(scope);
          const id = `${idPrefix}-${scope.replace(':', '-')}`;
          return (
            <li key={scope}>
              <input
                id={id}
                type="checkbox"
                checked={chosen.has(scope)}
                disabled={!allowed}
                onChange={(event) => toggle(scope, event.currentTarget.checked)}
                aria-describedby={allowed ? undefined : `${id}-reason`}
              />
              <label for={id}>
                <code>{scope}</code> <span class="muted">{SCOPES[scope]}</span>
              </label>
              {!allowed && (
                <span class="reason" id={`${id}-reason`}>
                  The connected key does not hold it, so it cannot give it.
                </span>
              )}
            </li>
          );
        })}
      </ul>
      {problem && (
        <p class="field-problem" id={`${idPrefix}-problem`}>
          {problem}
        </p>
      )}
      <FieldError error={error} path="/scopes" id={idPrefix} />
    </fieldset>
  );
}
