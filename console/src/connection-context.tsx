// The connection every page reads: the session, the connected key, and what changes them.
import type { DevdataClient } from '@devdata/client';
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ConnectedKey, DeveloperSession } from './connection';

export interface ConnectionState {
  session: DeveloperSession | undefined;
  key: ConnectedKey | undefined;
  setSession: (session: DeveloperSession | undefined) => void;
  setKey: (key: ConnectedKey | undefined) => void;
  logOut: () => Promise<void>;
}

export const ConnectionContext = createContext<ConnectionState | undefined>(undefined);

export function useConnection(): ConnectionState {
  const state = useContext(ConnectionContext);
  if (!state) throw new Error('useConnection outside the ConnectionContext provider');
  return state;
}

/** The client of the connected key; pages that call the API are shown only when there is one. */
export function useClient(): DevdataClient {
  const { key } = useConnection();
  if (!key) throw new Error('useClient without a connected key');
  return key.client;
}
