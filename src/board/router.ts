/**
 * Matches a method and path to a board route. Templates may put a parameter inside a
 * segment (`/messages/{id}.json`), so each compiles to an anchored expression; a
 * parameter never spans a `/`.
 */
import type { BoardRoute } from './route.js';

interface Compiled {
  pattern: RegExp;
  names: string[];
  byMethod: Map<string, BoardRoute>;
}

/** The router's answer: a route and its decoded parameters, other methods, or nothing. */
export type BoardLookup =
  | { kind: 'found'; route: BoardRoute; pathParams: Record<string, string> }
  | { kind: 'method'; allowed: string[] }
  | { kind: 'none' };

function compile(template: string): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  const source = template
    .split(/(\{[a-zA-Z]+\})/)
    .map((part) => {
      if (part.startsWith('{')) {
        names.push(part.slice(1, -1));
        return '([^/]+?)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { pattern: new RegExp(`^${source}$`), names };
}

/** The board's router, built from its route records at boot. */
export class BoardRouter {
  private readonly compiled: Compiled[] = [];

  constructor(routes: BoardRoute[]) {
    for (const r of routes) {
      let c = this.compiled.find((x) => x.byMethod.values().next().value!.path === r.path);
      if (!c) this.compiled.push((c = { ...compile(r.path), byMethod: new Map() }));
      if (c.byMethod.has(r.method)) throw new Error(`Duplicate board route ${r.method} ${r.path}`);
      c.byMethod.set(r.method, r);
    }
  }

  lookup(method: string, path: string): BoardLookup {
    for (const c of this.compiled) {
      const m = c.pattern.exec(path);
      if (!m) continue;
      const pathParams: Record<string, string> = {};
      for (let i = 0; i < c.names.length; i++) {
        try {
          pathParams[c.names[i]] = decodeURIComponent(m[i + 1]);
        } catch {
          return { kind: 'none' };
        }
      }
      const route = c.byMethod.get(method === 'HEAD' ? 'GET' : method);
      if (route) return { kind: 'found', route, pathParams };
      return { kind: 'method', allowed: [...c.byMethod.keys()] };
    }
    return { kind: 'none' };
  }
}
