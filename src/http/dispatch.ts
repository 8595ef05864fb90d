/**
 * The in-process request pipeline of the chat API: route lookup, organization by
 * Host, authentication, parameter decoding and checking, the handler, and rendering.
 * It never touches a socket: the uWS front end and the tests (`inject`) both call
 * `handle` with a plain `IncomingRequest`.
 */
import { secretsEqual } from '../../actors/passwords.js';
import { userByEmail } from '../../actors/kinds/organization.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { OrgRecord, UserRecord } from '../../actors/types.js';
import type { Config } from '../config.js';
import { decodeParams, MalformedBody } from './body.js';
import { ApiError } from '../../actors/errors.js';
import { errorBody, statusOf } from './errors.js';
import { compileParams, type ParamChecker } from './params.js';
import type { Reply, Route } from './route.js';
import { RateLimiter, type RateDecision } from './rate_limit.js';
import { Router } from './router.js';
import { Abortable, type Exchange, type IncomingRequest, type OutgoingResponse } from './types.js';

const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];
const WWW_AUTHENTICATE: [string, string] = ['WWW-Authenticate', 'Basic realm="zulip"'];
const DUMMY_KEY = 'x'.repeat(32);

/** Picks the subdomain out of a Host header: `""` for a bare host or an IP address. */
export function subdomainOf(host: string | undefined, externalHost: string): string {
  if (!host) return '';
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) return '';
  name = name.replace(/:\d+$/, '');
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(name)) return '';
  const root = externalHost.toLowerCase().replace(/:\d+$/, '');
  if (name === root) return '';
  if (name.endsWith(`.${root}`)) return name.slice(0, -(root.length + 1));
  return '';
}

function respond(status: number, body: string, extra?: Array<[string, string]>): OutgoingResponse {
  return { status, headers: extra ? [JSON_TYPE, ...extra] : [JSON_TYPE], body };
}

/** Renders an error in the chat API's shape, with the status its code implies. */
export function errorResponse(err: ApiError): OutgoingResponse {
  const status = statusOf(err.code);
  return respond(status, errorBody(err.code, err.message, err.extra), status === 401 ? [WWW_AUTHENTICATE] : undefined);
}

function render(reply: Exclude<Reply, null>, ignored: string[], extra?: Array<[string, string]>): OutgoingResponse {
  if ('raw' in reply) return respond(reply.status ?? 200, reply.raw, extra);
  const body: Record<string, unknown> = { result: 'success', msg: '', ...reply.json };
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
  return respond(reply.status ?? 200, JSON.stringify(body), extra);
}

/** 429 with `Retry-After`, in Zulip's shape. */
function rateLimited(decision: RateDecision): OutgoingResponse {
  return respond(429, errorBody('RATE_LIMIT_HIT', 'API usage exceeded rate limit', { 'retry-after': decision.retryAfter }), [
    ['Retry-After', String(decision.retryAfter)],
    ...decision.headers,
  ]);
}

/** The chat API as a function from request to response. */
export class ChatApp {
  readonly router: Router;
  private readonly checkers = new Map<Route, ParamChecker>();
  private readonly userLimiter: RateLimiter;
  /** Parsed Host and Authorization headers: a long-polling client sends the same ones every time. */
  private readonly subdomains = new Map<string, string>();
  private readonly parsedAuth = new Map<string, { email: string; key: string }>();
  private readonly anonymousLimiter: RateLimiter;

  constructor(readonly routes: Route[], private readonly runtime: Runtime, private readonly config: Config, private readonly log: (line: string) => void = console.error) {
    this.router = new Router(routes);
    for (const r of routes) this.checkers.set(r, compileParams(r));
    const now = (): number => runtime.nowMs();
    this.userLimiter = new RateLimiter(config.rateLimit, now);
    this.anonymousLimiter = new RateLimiter(config.rateLimitAnonymous, now);
  }

  /**
   * Answers one request: at once, through a promise, or (null) later through
   * `exchange.respond`, as a parked long-poll does.
   */
  handle(req: IncomingRequest, exchange: Exchange): OutgoingResponse | Promise<OutgoingResponse> | null {
    try {
      const result = this.run(req, exchange);
      if (result instanceof Promise) return result.catch((err: unknown) => this.failure(err, req));
      return result;
    } catch (err) {
      return this.failure(err, req);
    }
  }

  private failure(err: unknown, req: IncomingRequest): OutgoingResponse {
    if (err instanceof ApiError) return errorResponse(err);
    if (err instanceof MalformedBody) return errorResponse(new ApiError('BAD_REQUEST', err.message));
    this.log(`internal error on ${req.method} ${req.path}: ${(err as Error)?.stack ?? String(err)}`);
    return respond(500, errorBody('INTERNAL_SERVER_ERROR', 'Internal server error'));
  }

  private run(req: IncomingRequest, exchange: Exchange): OutgoingResponse | Promise<OutgoingResponse> | null {
    const found = this.router.lookup(req.method, req.path);
    if (found.kind === 'none') throw new ApiError('NOT_FOUND', 'Endpoint not found');
    if (found.kind === 'method') {
      return respond(405, errorBody('METHOD_NOT_ALLOWED', 'Method Not Allowed', { allowed_methods: found.allowed }), [['Allow', found.allowed.join(', ')]]);
    }
    const { route, pathParams } = found.match;
    const org = this.organization(req);
    const user = route.auth === 'user' ? this.authenticate(req, org) : (undefined as unknown as UserRecord);
    let limitHeaders: Array<[string, string]> | undefined;
    if (!route.unlimited) {
      const limiter = route.auth === 'user' ? this.userLimiter : this.anonymousLimiter;
      if (limiter.enabled) {
        const decision = limiter.hit(route.auth === 'user' ? `${org.id}:${user.user_id}` : `ip:${req.remoteAddress}`);
        if (!decision.allowed) return rateLimited(decision);
        limitHeaders = decision.headers;
      }
    }
    const { values, files } = decodeParams(req.headers['content-type'], req.body, req.query);
    const { params, ignored } = this.checkers.get(route)!.check(values, pathParams);
    const agent = req.headers['user-agent'] ?? '';
    const client = agent.split(/[/ ]/)[0] || 'Unspecified';
    const reply = route.handler({ params, user, org, runtime: this.runtime, config: this.config, request: req, exchange, files, client });
    if (reply === null) return null;
    if (reply instanceof Promise) {
      return reply.then((r) => {
        if (r === null) throw new Error(`${route.method} ${route.path}: an asynchronous handler cannot answer later`);
        return render(r, ignored, limitHeaders);
      });
    }
    return render(reply, ignored, limitHeaders);
  }

  /** The organization the Host names. */
  private organization(req: IncomingRequest): OrgRecord {
    const host = req.headers.host ?? '';
    let sub = this.subdomains.get(host);
    if (sub === undefined) {
      sub = subdomainOf(host, this.config.externalHost);
      if (this.subdomains.size >= CACHE_LIMIT) this.subdomains.clear();
      this.subdomains.set(host, sub);
    }
    const server = this.runtime.server();
    const id = server.bySubdomain.get(sub);
    const org = id === undefined ? undefined : server.orgs.get(id);
    if (!org) throw new ApiError('NONEXISTENT_SUBDOMAIN', 'There is no organization at this address.');
    if (org.deactivated) throw new ApiError('REALM_DEACTIVATED', 'This organization has been deactivated');
    return org;
  }

  /** The email and key of a Basic header. Only the parse is cached; the key is checked on every request. */
  private credentials(header: string): { email: string; key: string } {
    let parsed = this.parsedAuth.get(header);
    if (!parsed) {
      parsed = decodeBasic(header);
      if (this.parsedAuth.size >= CACHE_LIMIT) this.parsedAuth.clear();
      this.parsedAuth.set(header, parsed);
    }
    return parsed;
  }

  /** HTTP Basic `email:api_key`, the key compared in constant time. */
  private authenticate(req: IncomingRequest, org: OrgRecord): UserRecord {
    const header = req.headers.authorization;
    if (!header) throw new ApiError('UNAUTHORIZED', 'Not logged in: API authentication or user session required');
    const { email, key } = this.credentials(header);
    const orgCtx = this.runtime.org(org.id)!;
    const user = userByEmail(orgCtx, email);
    const matches = secretsEqual(key, user?.api_key ?? DUMMY_KEY);
    if (!user || !matches) throw new ApiError('INVALID_API_KEY', 'Invalid API key');
    if (!user.is_active) throw new ApiError('USER_DEACTIVATED', 'Account is deactivated');
    return user;
  }
}

/** Entries kept by each small parse cache before it starts over. */
const CACHE_LIMIT = 10000;

/** Decodes `Basic base64(email:key)`; throws `UNAUTHORIZED` for anything else. */
function decodeBasic(header: string): { email: string; key: string } {
  const [scheme, encoded] = header.trim().split(/\s+/, 2);
  if (scheme.toLowerCase() !== 'basic' || !encoded) throw new ApiError('UNAUTHORIZED', 'Only Basic authentication is supported.');
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new ApiError('UNAUTHORIZED', 'Invalid authorization header for basic auth');
  return { email: decoded.slice(0, colon), key: decoded.slice(colon + 1) };
}

/** A request for `inject`: only method and url are required. */
export interface InjectRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  remoteAddress?: string;
  abort?: Abortable;
}

/** Runs a request through an app without a socket, as Fastify's `inject` does. */
export async function inject(app: { handle(req: IncomingRequest, exchange: Exchange): OutgoingResponse | Promise<OutgoingResponse> | null }, r: InjectRequest): Promise<{ status: number; headers: Record<string, string>; body: string; json: any }> {
  const q = r.url.indexOf('?');
  const headers: Record<string, string> = { host: '127.0.0.1', ...Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])) };
  const req: IncomingRequest = {
    method: r.method.toUpperCase(),
    path: q < 0 ? r.url : r.url.slice(0, q),
    query: q < 0 ? '' : r.url.slice(q + 1),
    headers,
    body: typeof r.body === 'string' ? Buffer.from(r.body) : (r.body ?? Buffer.alloc(0)),
    remoteAddress: r.remoteAddress ?? '127.0.0.1',
  };
  const exchange = r.abort ?? new Abortable();
  const later = new Promise<OutgoingResponse>((resolve) => {
    exchange.responder = resolve;
  });
  const res = (await app.handle(req, exchange)) ?? (await later);
  // A real client reads the response and sends its next request on a later loop turn;
  // resolving on the next turn keeps in-process tests as faithful as a socket.
  await new Promise((resolve) => setImmediate(resolve));
  const body = res.body.toString();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: Object.fromEntries(res.headers.map(([k, v]) => [k.toLowerCase(), v])), body, json };
}
