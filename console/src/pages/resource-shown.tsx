// The resource a link opened the resources page on (`/console/resources?show=<id>`): read by its
// id, whatever page of the list it is on.
import type { Resource } from '@devdata/client';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, Time } from '../components/format';
import { Section } from '../components/page';
import { GuardedButton } from '../components/scope-gate';
import { useClient } from '../connection-context';
import { isStatus } from '../errors';
import { useLoad } from '../hooks';
import { Link } from '../router';

export function ShownResource({ id, onEdit }: { id: string; onEdit: (resource: Resource) => void }) {
  const client = useClient();
  const read = useLoad((signal) => client.getResource({ path: { id } }, { signal }), [client, id]);
  const resource = read.data;
  const gone = isStatus(read.error, 404);
  return (
    <Section title={resource?.name ?? 'Resource'} id="shown-resource-title" actions={<Link to="resources">Back to all resources</Link>}>
      {read.loading && <Busy label="Reading the resource" />}
      {gone ? (
        <Notice kind="warning">
          <p>
            The resource <code>{id}</code> does not exist (any more).
          </p>
        </Notice>
      ) : (
        <ErrorNotice error={read.error} title="The resource could not be read" />
      )}
      {resource && (
        <>
          <dl class="facts" data-shown-resource-id={resource.id}>
            <dt>State</dt>
            <dd class="state">{formatState(resource.state)}</dd>
            <dt>Type</dt>
            <dd>{resource.type}</dd>
            <dt>Tags</dt>
            <dd>
              {resource.tags.length === 0 ? (
                <span class="muted">none</span>
              ) : (
                resource.tags.map((tag) => (
                  <span key={tag} class="tag">
                    {tag}
                  </span>
                ))
              )}
            </dd>
            <dt>Version</dt>
            <dd>{resource.version}</dd>
            <dt>Updated</dt>
            <dd>
              <Time value={resource.updatedAt} />
            </dd>
            <dt>Id</dt>
            <dd>
              <code>{resource.id}</code>
            </dd>
          </dl>
          <div class="actions">
            <Link to="resources/history" show={resource.id} class="button-link">
              History<span class="visually-hidden"> of {resource.name}</span>
            </Link>
            <GuardedButton needs={['resources:write']} type="button" class="secondary" onClick={() => onEdit(resource)}>
              Edit<span class="visually-hidden"> {resource.name}</span>
            </GuardedButton>
          </div>
        </>
      )}
    </Section>
  );
}
