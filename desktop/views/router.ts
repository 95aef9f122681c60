/// <reference lib="dom" />
import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes: `#/status`, `#/studio`, `#/studio/<agent>`. Hash rather than path routing so the
 * server serves one page and deep links (`hangar://studio/echo`) map onto it one to one.
 */
export interface Route {
  view: string;
  params: string[];
}

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] ?? 'status', params: parts.slice(1) };
}

export function href(view: string, ...params: string[]): string {
  return `#/${[view, ...params].map(encodeURIComponent).join('/')}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}
