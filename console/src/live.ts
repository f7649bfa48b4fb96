// Following the event log live through the client's stream, with its state for the page to show.
import type { DevdataError, DevdataClient, DevdataEvent, EventStream } from '@devdata/client';
import { useEffect, useRef, useState } from 'preact/hooks';

export type LiveStatus =
  | { state: 'connecting' }
  | { state: 'live' }
  | { state: 'reconnecting'; error: DevdataError | undefined }
  | { state: 'stopped'; error: unknown };

export interface FollowOptions {
  /** An exact type or a `prefix.*`. */
  type?: string;
  /** Resume after this event id; without it only events from now on arrive. */
  after?: number;
  signal: AbortSignal;
  onEvent: (event: DevdataEvent) => void;
  onStatus: (status: LiveStatus) => void;
  /**
   * Told once, when the first connection is open, where the stream started: events after that id
   * arrive on the stream, events up to it are history (read with listEvents).
   */
  onStart?: (cursor: number) => void;
}

/**
 * The stream's starting cursor. The stream opens with `id: <cursor>`, which the client's
 * EventStream records in `lastEventId` as soon as it has read it, just after its onConnect; it
 * does not announce it, so it is awaited here (a few milliseconds).
 */
async function startingCursor(stream: EventStream, signal: AbortSignal): Promise<number | undefined> {
  for (let waited = 0; waited < 5000 && !signal.aborted; waited += 10) {
    if (stream.lastEventId !== undefined) return stream.lastEventId;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return stream.lastEventId;
}

export function followEvents(client: DevdataClient, options: FollowOptions): EventStream {
  const { signal, onEvent, onStatus, onStart } = options;
  let started = false;
  onStatus({ state: 'connecting' });
  const stream = client.streamEvents({
    type: options.type,
    after: options.after,
    signal,
    onConnect: () => {
      onStatus({ state: 'live' });
      if (started || !onStart) return;
      started = true;
      void startingCursor(stream, signal).then((cursor) => {
        if (cursor !== undefined && !signal.aborted) onStart(cursor);
      });
    },
    onReconnect: ({ error }) => onStatus({ state: 'reconnecting', error }),
  });
  void (async () => {
    try {
      for await (const event of stream) onEvent(event);
    } catch (error) {
      if (!signal.aborted) onStatus({ state: 'stopped', error });
    }
  })();
  return stream;
}

export function liveStatusText(status: LiveStatus): string {
  switch (status.state) {
    case 'connecting':
      return 'Connecting to the live stream';
    case 'live':
      return 'Live';
    case 'reconnecting':
      return `Reconnecting${status.error ? ` (${status.error.message})` : ''}`;
    case 'stopped':
      return 'Live updates stopped';
  }
}

/**
 * Follows the account's events of `type` while `enabled`, each handed to the `onEvent` of the
 * latest render. `started` turns true once the stream is open, or stopped, or when it is not
 * followed: a page reads what it shows then, so that no change falls between the read and the
 * stream.
 */
export function useLiveEvents(
  client: DevdataClient,
  type: string,
  enabled: boolean,
  onEvent: (event: DevdataEvent) => void,
): { live: LiveStatus; started: boolean } {
  const [live, setLive] = useState<LiveStatus>({ state: 'connecting' });
  const [started, setStarted] = useState(!enabled);
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    if (!enabled) return;
    const controller = new AbortController();
    followEvents(client, {
      type,
      signal: controller.signal,
      onEvent: (event) => handler.current(event),
      onStatus: (status) => {
        setLive(status);
        // Without the stream the page is still worth reading.
        if (status.state === 'stopped') setStarted(true);
      },
      onStart: () => setStarted(true),
    });
    return () => controller.abort();
  }, [client, type, enabled]);
  return { live, started };
}
