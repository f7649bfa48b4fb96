// Loading and acting with progress and errors, the same way on every page.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
  /** Changes the loaded value in place (a live update, the answer of a write). */
  update: (change: (current: T | undefined) => T | undefined) => void;
}

/** Runs `load` when `deps` change (aborting the previous run) and on `reload()`. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const loadedGeneration = useRef(generation);
  useEffect(() => {
    const controller = new AbortController();
    // A reload keeps what is shown until the new data arrives; other inputs (a filter, a page)
    // clear it, so nothing is shown under a heading it does not match.
    if (loadedGeneration.current === generation) setData(undefined);
    loadedGeneration.current = generation;
    setLoading(true);
    setError(undefined);
    load(controller.signal).then(
      (value) => {
        if (controller.signal.aborted) return;
        setData(value);
        setLoading(false);
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return;
        setError(failure);
        setLoading(false);
      },
    );
    return () => controller.abort();
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data, error, loading, reload, update: setData };
}

export interface Action {
  busy: boolean;
  error: unknown;
  /** Runs `act`, showing progress; a failure is kept in `error` (and undefined returned). */
  run: <T>(act: () => Promise<T>) => Promise<T | undefined>;
  clear: () => void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );
  const run = useCallback(async <T>(act: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await act();
    } catch (failure) {
      if (mounted.current) setError(failure);
      return undefined;
    } finally {
      if (mounted.current) setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: useCallback(() => setError(undefined), []) };
}

/** Calls `tick` every `ms` while `active`. */
export function useInterval(tick: () => void, ms: number, active = true): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => latest.current(), ms);
    return () => clearInterval(timer);
  }, [ms, active]);
}
