// Whether the page's content is narrow (a phone, or a small window beside the side navigation):
// lists then show each row as a card and times in short. Measured on the content itself, so the
// navigation's width counts too; one observer for the whole console.
import { createContext, type ComponentChildren, type RefObject } from 'preact';
import { useContext, useLayoutEffect, useState } from 'preact/hooks';

/** Below this content width (CSS pixels) a table's columns no longer fit side by side. */
export const NARROW_BELOW_PX = 720;

const NarrowContext = createContext(false);

export function useNarrow(): boolean {
  return useContext(NarrowContext);
}

/** Provides whether the element `measured` (the page's main content) is narrower than NARROW_BELOW_PX. */
export function NarrowProvider({ measured, children }: { measured: RefObject<HTMLElement | null>; children: ComponentChildren }) {
  const [narrow, setNarrow] = useState(() => window.innerWidth < NARROW_BELOW_PX);
  useLayoutEffect(() => {
    const element = measured.current;
    if (!element) return;
    const observer = new ResizeObserver(([entry]) => {
      if (entry) setNarrow(entry.contentRect.width < NARROW_BELOW_PX);
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [measured]);
  return <NarrowContext.Provider value={narrow}>{children}</NarrowContext.Provider>;
}
