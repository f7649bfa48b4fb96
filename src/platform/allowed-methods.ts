// The methods each path has, so that a request the router cannot match tells "no such path" (404)
// from "no such method on this path" (405 with `Allow`; docs/decisions.md, "HTTP contract"). Read
// from the routes as they are registered, HEAD routes included, so `Allow` never names a method
// the path does not answer.
import type { FastifyInstance } from 'fastify';

/** The order `Allow` lists methods in. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

interface PathMethods {
  /** The route's segments: a name, `:param` (any one segment, even empty) or a final `*` (the rest). */
  segments: string[];
  methods: Set<string>;
}

/** Whether a route's segments match a path's, each decoded on its own as the router does (`%2F` stays inside its segment). */
function matches(pattern: readonly string[], path: readonly string[]): boolean {
  for (let index = 0; index < pattern.length; index++) {
    const segment = pattern[index]!;
    if (segment === '*' && index === pattern.length - 1) return true;
    if (index >= path.length) return false;
    if (!segment.startsWith(':') && segment !== path[index]) return false;
  }
  return pattern.length === path.length;
}

function decodedSegments(path: string): string[] | undefined {
  try {
    return path.split('/').map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

export class RouteMethods {
  private readonly byUrl = new Map<string, PathMethods>();

  add(url: string, methods: string | string[]): void {
    // The catch-all OPTIONS route (CORS preflights) has no path of its own.
    if (url === '*') return;
    let entry = this.byUrl.get(url);
    if (entry === undefined) {
      entry = { segments: url.split('/'), methods: new Set() };
      this.byUrl.set(url, entry);
    }
    for (const method of Array.isArray(methods) ? methods : [methods]) entry.methods.add(method.toUpperCase());
  }

  /** The methods routes answer at this path (as sent, percent-encoded), in `Allow` order; empty when no route has it. */
  of(path: string): string[] {
    const segments = decodedSegments(path);
    if (segments === undefined) return [];
    const methods = new Set<string>();
    for (const entry of this.byUrl.values()) if (matches(entry.segments, segments)) for (const method of entry.methods) methods.add(method);
    return METHOD_ORDER.filter((method) => methods.has(method));
  }
}

/** Records every route the app registers from now on. */
export function recordRouteMethods(app: FastifyInstance): RouteMethods {
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => routes.add(route.url, route.method));
  return routes;
}
