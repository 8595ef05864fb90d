/**
 * Matches a method and path to a route record, for either API. Static paths are one
 * map lookup (the chat API's hot paths, `GET /api/v1/events` first); templates with
 * parameters are tried segment by segment. A parameter is a whole segment
 * (`/users/{user_id}`) or sits inside one (`/messages/{id}.json`); it never spans a
 * `/` and is never empty, except a parameter declared `rest`: the template's last
 * segment, it takes the rest of the path, slashes included (Django's `<path:…>`);
 * such templates are tried after all others.
 */
import type { RouteRecord } from './route.js';

/** How an API's paths are matched. */
export interface RouterOptions {
  /** `/a/b/` is `/a/b` (chat, as Zulip's URL patterns allow); otherwise it matches nothing. */
  stripTrailingSlash: boolean;
  /**
   * A parameter holding U+FFFD (what uWS leaves for raw invalid UTF-8) matches nothing,
   * as `%FF` does (chat). Otherwise it reaches the route, which refuses the value.
   */
  refuseReplacementChar: boolean;
}

/** One segment of a template: literal text, a whole-segment parameter, or an expression. */
type Segment = { kind: 'literal'; text: string } | { kind: 'param'; name: string; accepts?: RegExp } | { kind: 'rest'; name: string } | { kind: 'pattern'; re: RegExp; names: string[] };

interface Pattern {
  template: string;
  segments: Segment[];
  byMethod: Map<string, RouteRecord>;
}

/** What the router found: a route and its decoded path parameters, a path with other methods, or nothing. */
export type Lookup =
  | { kind: 'found'; route: RouteRecord; pathParams: Record<string, string> }
  | { kind: 'method'; allowed: string[] }
  | { kind: 'none' };

/** Raw segments an integer parameter can be: only these select its template. */
const INTEGER_SEGMENT = /^-?[0-9]+$/;

function segmentOf(text: string, r: RouteRecord): Segment {
  if (!text.includes('{')) return { kind: 'literal', text };
  const whole = /^\{([a-zA-Z_]+)\}$/.exec(text);
  if (whole && r.params[whole[1]]?.rest) return { kind: 'rest', name: whole[1] };
  if (whole) {
    // An integer parameter matches only digits, so that `/users/{user_id}` and
    // `/users/{email}` can share a shape, as Zulip's `<int:user_id>` and `<email>` do.
    const type = (r.params[whole[1]]?.schema as { type?: unknown } | undefined)?.type;
    return type === 'integer' ? { kind: 'param', name: whole[1], accepts: INTEGER_SEGMENT } : { kind: 'param', name: whole[1] };
  }
  const names: string[] = [];
  const source = text
    .split(/(\{[a-zA-Z_]+\})/)
    .map((part) => {
      if (part.startsWith('{')) {
        names.push(part.slice(1, -1));
        return '(.+?)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { kind: 'pattern', re: new RegExp(`^${source}$`), names };
}

export class Router {
  private readonly exact = new Map<string, Map<string, RouteRecord>>();
  private readonly patterns: Pattern[] = [];

  constructor(routes: RouteRecord[], private readonly options: RouterOptions) {
    for (const r of routes) this.add(r);
  }

  private add(r: RouteRecord): void {
    let methods: Map<string, RouteRecord>;
    if (!r.path.includes('{')) {
      methods = this.exact.get(r.path) ?? new Map();
      this.exact.set(r.path, methods);
    } else {
      let pattern = this.patterns.find((p) => p.template === r.path);
      if (!pattern) {
        pattern = { template: r.path, segments: r.path.split('/').map((text) => segmentOf(text, r)), byMethod: new Map() };
        const restAt = pattern.segments.findIndex((seg) => seg.kind === 'rest');
        if (restAt >= 0 && restAt !== pattern.segments.length - 1) throw new Error(`Route ${r.method} ${r.path}: a rest parameter must be the last segment`);
        // Templates whose parameters only accept some segments are tried before those
        // that take any, and those that take the rest of the path last of all.
        const rank = (p: Pattern): number => (p.segments.some((seg) => seg.kind === 'param' && seg.accepts !== undefined) ? 0 : p.segments.some((seg) => seg.kind === 'rest') ? 2 : 1);
        const at = this.patterns.findIndex((p) => rank(p) > rank(pattern!));
        if (at < 0) this.patterns.push(pattern);
        else this.patterns.splice(at, 0, pattern);
      }
      methods = pattern.byMethod;
    }
    if (methods.has(r.method)) throw new Error(`Duplicate route ${r.method} ${r.path}`);
    methods.set(r.method, r);
  }

  /** Every route served, as `METHOD /path/template`. */
  list(): string[] {
    const out: string[] = [];
    for (const [path, methods] of this.exact) for (const m of methods.keys()) out.push(`${m} ${path}`);
    for (const p of this.patterns) for (const m of p.byMethod.keys()) out.push(`${m} ${p.template}`);
    return out;
  }

  lookup(method: string, path: string): Lookup {
    const normalized = this.options.stripTrailingSlash && path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const methods = this.exact.get(normalized);
    if (methods) return pick(methods, method, {});
    if (this.patterns.length === 0) return { kind: 'none' };
    const parts = normalized.split('/');
    for (const p of this.patterns) {
      const rest = p.segments[p.segments.length - 1].kind === 'rest';
      if (rest ? parts.length < p.segments.length : p.segments.length !== parts.length) continue;
      const params = this.match(p.segments, parts);
      if (params) return pick(p.byMethod, method, params);
    }
    return { kind: 'none' };
  }

  /** The decoded parameters of a template that matches `parts`, or null. */
  private match(segments: Segment[], parts: string[]): Record<string, string> | null {
    const params: Record<string, string> = {};
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i];
      if (seg.kind === 'rest') {
        const value = this.decode(parts.slice(i).join('/'));
        if (value === null) return null;
        params[seg.name] = value;
      } else if (seg.kind === 'literal') {
        if (seg.text !== parts[i]) return null;
      } else if (seg.kind === 'param') {
        if (seg.accepts && !seg.accepts.test(parts[i])) return null;
        const value = this.decode(parts[i]);
        if (value === null) return null;
        params[seg.name] = value;
      } else {
        const m = seg.re.exec(parts[i]);
        if (!m) return null;
        for (let j = 0; j < seg.names.length; j++) {
          const value = this.decode(m[j + 1]);
          if (value === null) return null;
          params[seg.names[j]] = value;
        }
      }
    }
    return params;
  }

  /** A raw parameter, percent-decoded; null when it cannot name anything. */
  private decode(raw: string): string | null {
    if (raw.length === 0 || (this.options.refuseReplacementChar && raw.includes('\uFFFD'))) return null;
    try {
      return decodeURIComponent(raw);
    } catch {
      return null;
    }
  }
}

function pick(methods: Map<string, RouteRecord>, method: string, pathParams: Record<string, string>): Lookup {
  const route = methods.get(method) ?? (method === 'HEAD' ? methods.get('GET') : undefined);
  if (route) return { kind: 'found', route, pathParams };
  return { kind: 'method', allowed: [...methods.keys()] };
}
