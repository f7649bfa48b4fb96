// A resource state typed with the control its type fits: on/off for switches and binary sensors,
// a number (or text) for sensors, text for text.
import type { ResourceType } from '@devdata/client';
import { FieldError, fieldProps } from './field-error';

export type StateValue = number | string | boolean;

export function defaultState(type: ResourceType): StateValue {
  if (type === 'switch' || type === 'binary_sensor') return false;
  if (type === 'sensor') return 0;
  return '';
}

export function StateInput({
  id,
  type,
  value,
  onChange,
  error,
  path = '/state',
}: {
  id: string;
  type: ResourceType;
  value: StateValue;
  onChange: (value: StateValue) => void;
  /** A failure whose details may name the state (`path`), shown beside it. */
  error?: unknown;
  path?: string;
}) {
  const invalid = fieldProps(error, path, id);
  const message = <FieldError error={error} path={path} id={id} />;
  if (type === 'switch' || type === 'binary_sensor') {
    return (
      <div class="field field-inline">
        <input
          id={id}
          type="checkbox"
          role="switch"
          aria-checked={value === true}
          checked={value === true}
          onChange={(event) => onChange(event.currentTarget.checked)}
          {...invalid}
        />
        <label for={id}>State: {value === true ? 'on' : 'off'}</label>
        {message}
      </div>
    );
  }
  if (type === 'sensor') {
    const numeric = typeof value === 'number';
    return (
      <fieldset class="field">
        <legend>State</legend>
        <div class="inline-choices">
          <label>
            <input type="radio" name={`${id}-kind`} checked={numeric} onChange={() => onChange(Number.isFinite(Number(value)) ? Number(value) : 0)} /> Number
          </label>
          <label>
            <input type="radio" name={`${id}-kind`} checked={!numeric} onChange={() => onChange(String(value))} /> Text
          </label>
        </div>
        <label class="visually-hidden" for={id}>
          State value
        </label>
        {numeric ? (
          <input
            id={id}
            type="number"
            step="any"
            required
            value={Number.isNaN(value) ? '' : String(value)}
            onInput={(event) => onChange(event.currentTarget.valueAsNumber)}
            {...invalid}
          />
        ) : (
          <input id={id} required value={String(value)} onInput={(event) => onChange(event.currentTarget.value)} {...invalid} />
        )}
        {message}
      </fieldset>
    );
  }
  return (
    <div class="field">
      <label for={id}>State</label>
      <input id={id} value={String(value)} onInput={(event) => onChange(event.currentTarget.value)} {...invalid} />
      {message}
    </div>
  );
}
