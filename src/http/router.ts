/**
 * Matches a method and path to a route record. Static paths are one map lookup;
 * paths with parameters are tried segment by segment.
 */
import type { Method, Route } from './route.js';

/** A matched route and its raw path parameters. */
export interface Match {
  route: Route;
  pathParams: Record<string, string>;
}

interface Pattern {
  segments: string[];
  byMethod: Map<string, Route>;
}

/** What the router found: a route, a path with other methods, or nothing. */
export type Lookup = { kind: 'found'; match: Match } | { kind: 'method'; allowed: string[] } | { kind: 'none' };

export class Router {
  private readonly exact = new Map<string, Map<string, Route>>();
  private readonly patterns: Pattern[] = [];

  constructor(routes: Route[]) {
    for (const r of routes) this.add(r);
  }

  private add(r: Route): void {
    if (!r.path.includes('{')) {
      let methods = this.exact.get(r.path);
      if (!methods) this.exact.set(r.path, (methods = new Map()));
      if (methods.has(r.method)) throw new Error(`Duplicate route ${r.method} ${r.path}`);
      methods.set(r.method, r);
      return;
    }
    const segments = r.path.split('/');
    let pattern = this.patterns.find((p) => p.segments.join('/') === segments.join('/'));
    if (!pattern) this.patterns.push((pattern = { segments, byMethod: new Map() }));
    if (pattern.byMethod.has(r.method)) throw new Error(`Duplicate route ${r.method} ${r.path}`);
    pattern.byMethod.set(r.method, r);
  }

  lookup(method: string, path: string): Lookup {
    const normalized = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const methods = this.exact.get(normalized);
    if (methods) return pick(methods, method, {});
    const parts = normalized.split('/');
    for (const p of this.patterns) {
      if (p.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const seg = p.segments[i];
        if (seg.startsWith('{')) {
          // uWS hands raw invalid UTF-8 over as U+FFFD; `%FF` fails decoding: both match nothing.
          if (parts[i].length === 0 || parts[i].includes('\uFFFD')) ok = false;
          else {
            try {
              params[seg.slice(1, -1)] = decodeURIComponent(parts[i]);
            } catch {
              ok = false;
            }
          }
        } else if (seg !== parts[i]) ok = false;
      }
      if (ok) return pick(p.byMethod, method, params);
    }
    return { kind: 'none' };
  }
}

function pick(methods: Map<string, Route>, method: string, pathParams: Record<string, string>): Lookup {
  const route = methods.get(method === 'HEAD' ? 'GET' : method);
  if (route) return { kind: 'found', match: { route, pathParams } };
  return { kind: 'method', allowed: [...methods.keys()] as Method[] };
}
