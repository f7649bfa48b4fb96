// The new-resource form: name, type, state for that type, attributes as JSON and tags.
import { RESOURCE_TYPES, type ResourceType } from '@devdata/client';
import { useState } from 'preact/hooks';
import { FormActions } from '../components/forms';
import { ErrorNotice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { Section } from '../components/page';
import { defaultState, StateInput, type StateValue } from '../components/state-input';
import { useClient } from '../connection-context';
import { parseJsonObject, parseList } from '../errors';
import { useAction } from '../hooks';

export function CreateResource({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const [name, setName] = useState('');
  const [type, setType] = useState<ResourceType>('sensor');
  const [state, setState] = useState<StateValue>(defaultState('sensor'));
  const [attributes, setAttributes] = useState('{}');
  const [tags, setTags] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(async () => {
      if (typeof state === 'number' && Number.isNaN(state)) throw new Error('The state must be a number');
      return client.createResource({ body: { name, type, state, attributes: parseJsonObject(attributes, 'Attributes'), tags: parseList(tags) } });
    });
    if (created) onCreated();
  };
  return (
    <Section title="New resource" id="create-resource-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="create-name">Name</label>
          <input
            id="create-name"
            required
            maxLength={200}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            {...fieldProps(action.error, '/name', 'create-name')}
          />
          <FieldError error={action.error} path="/name" id="create-name" />
        </div>
        <div class="field">
          <label for="create-type">Type</label>
          <select
            id="create-type"
            value={type}
            onChange={(event) => {
              const next = event.currentTarget.value as ResourceType;
              setType(next);
              setState(defaultState(next));
            }}
            {...fieldProps(action.error, '/type', 'create-type')}
          >
            {RESOURCE_TYPES.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
          <FieldError error={action.error} path="/type" id="create-type" />
        </div>
        <StateInput id="create-state" type={type} value={state} onChange={setState} error={action.error} />
        <div class="field">
          <label for="create-attributes">Attributes (JSON object)</label>
          <textarea
            id="create-attributes"
            rows={3}
            value={attributes}
            onInput={(event) => setAttributes(event.currentTarget.value)}
            spellcheck={false}
            {...fieldProps(action.error, '/attributes', 'create-attributes')}
          />
          <FieldError error={action.error} path="/attributes" id="create-attributes" />
        </div>
        <div class="field">
          <label for="create-tags">Tags</label>
          <input
            id="create-tags"
            value={tags}
            placeholder="greenhouse, north"
            onInput={(event) => setTags(event.currentTarget.value)}
            {...fieldProps(action.error, '/tags', 'create-tags')}
          />
          <FieldError error={action.error} path="/tags" id="create-tags" />
        </div>
        <ErrorNotice error={action.error} title="The resource was not created" />
        <FormActions busy={action.busy} label="Create resource" busyLabel="Creating…" onCancel={onDone} />
      </form>
    </Section>
  );
}
