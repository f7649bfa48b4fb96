// An event in one line, for the events page's rows and the event a link opens.
import type { DevdataEvent } from '@devdata/client';
import { formatState } from '../components/format';

export function summarizeEvent(event: DevdataEvent): string {
  switch (event.type) {
    case 'resource.created':
    case 'resource.deleted':
      return `${event.data.resource.name} (${event.data.resource.type}) · state ${formatState(event.data.resource.state)}`;
    case 'resource.updated': {
      const changed = event.data.changed.length ? ` · changed ${event.data.changed.join(', ')}` : '';
      return `${event.data.resource.name} → ${formatState(event.data.resource.state)} (version ${event.data.resource.version})${changed}`;
    }
    case 'schedule.executed':
      return `${event.data.schedule.name}: ${event.data.outcome}${event.data.error ? ` (${event.data.error})` : ''}`;
    default: {
      const text = JSON.stringify(event.data);
      return text.length > 100 ? `${text.slice(0, 99)}…` : text;
    }
  }
}
