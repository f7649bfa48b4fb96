import { ErrorNotice } from './feedback';
import { liveStatusText, type LiveStatus } from '../live';

/** Where the live stream stands; a stop shows its error. */
export function LiveBadge({ status, paused = false }: { status: LiveStatus; paused?: boolean }) {
  const text = paused ? 'Paused' : liveStatusText(status);
  return (
    <>
      <span class={`live live-${paused ? 'paused' : status.state}`} role="status">
        <span class="live-dot" aria-hidden="true" />
        {text}
      </span>
      {status.state === 'stopped' && !paused && <ErrorNotice error={status.error} title="The live stream stopped" />}
    </>
  );
}
