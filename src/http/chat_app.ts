/**
 * The chat API's entry point: the shared pipeline (`app.ts`) over the chat route
 * records, with the chat API's policy: the organization chosen by Host, HTTP Basic
 * authentication, and per-user (or, without a user, per-address) rate limits, plus
 * the limit of the route's rate limit class, if any.
 */
import type { LogFields, Logger } from '../../actors/core/logger.js';
import { secretsEqual } from '../../actors/rules/passwords.js';
import { userByEmail } from '../../actors/kinds/organization.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { OrgRecord, UserRecord } from '../../actors/shared/types.js';
import type { Config } from '../config.js';
import { mailerFor, type Mailer } from '../mail/mailer.js';
import { ApiError } from '../../actors/shared/errors.js';
import { CHAT_API } from './api.js';
import { App, type Limit } from './app.js';
import type { Checked } from './params.js';
import { refusal, type ChatContext, type RateClass, type Reply, type RouteRecord } from './route.js';
import { RateLimiter, type RateLimit } from './rate_limit.js';
import { subdomainOf } from './host.js';
import type { Exchange, IncomingRequest, OutgoingResponse } from './types.js';

const DUMMY_KEY = 'x'.repeat(32);

/** Renders an error in the chat API's shape, with the status its code implies. */
export function errorResponse(err: ApiError): OutgoingResponse {
  return CHAT_API.renderError(CHAT_API.coded(err)!);
}

/** Who a chat request is from: its organization, and its user on routes with `auth: 'user'`. */
interface Caller {
  org: OrgRecord;
  user: UserRecord;
}

/** The chat API as a function from request to response. */
export class ChatApp extends App<Caller> {
  /** Parsed Host and Authorization headers: a long-polling client sends the same ones every time. */
  private readonly subdomains = new Map<string, string | null>();
  private readonly parsedAuth = new Map<string, { email: string; key: string }>();
  /** Client names by User-Agent: a client sends the same one every time. */
  private readonly clients = new Map<string, string>();

  /** Where invitation mail goes (the configuration's outbox or SMTP server unless given). */
  private readonly mailer: Mailer;

  constructor(routes: RouteRecord[], runtime: Runtime, private readonly config: Config, log: Logger, mailer?: Mailer) {
    super(CHAT_API, routes, runtime, log);
    this.mailer = mailer ?? mailerFor(config);
    const now = (): number => runtime.nowMs();
    const user: Limit<Caller> = { limiter: new RateLimiter(config.rateLimit, now), key: (_req, who) => `${who.org.id}:${who.user.user_id}` };
    const anonymous: Limit<Caller> = { limiter: new RateLimiter(config.rateLimitAnonymous, now), key: (req) => `ip:${req.remoteAddress}` };
    const classes = new Map(Object.entries(RATE_CLASSES).map(([name, c]) => [name, { ...c, limiter: new RateLimiter(config[c.setting], now), afterParams: true }]));
    this.limits((r) => {
      if (r.unlimited) return [];
      const general = r.auth === 'user' ? user : anonymous;
      return r.rateClass ? [general, classes.get(r.rateClass)!] : [general];
    });
  }

  /** Whether the route of a request reads its body as a stream (`streamBody`). */
  streamsBody(req: IncomingRequest): boolean {
    const found = this.router.lookup(req.method, req.path);
    return found.kind === 'found' && found.route.streamBody === true;
  }

  /** The body ceiling of a request: uploads are held to `max_file_upload_size_mib` (plus form overhead), not `--max-body-bytes`. */
  bodyLimit(req: IncomingRequest): number {
    return this.streamsBody(req) ? this.config.maxFileUploadSizeMib * 1024 * 1024 + STREAM_OVERHEAD_BYTES : this.config.maxBodyBytes;
  }

  protected admit(route: RouteRecord, req: IncomingRequest): Caller {
    const org = this.organization(req);
    if (route.auth === 'user') {
      const user = this.authenticate(req, org);
      const refused = refusal(route.requires, user);
      if (refused) throw refused;
      return { org, user };
    }
    if (org.deactivated && !route.deactivatedOrg) throw new ApiError('REALM_DEACTIVATED', REALM_DEACTIVATED_MSG);
    return { org, user: undefined as unknown as UserRecord };
  }

  protected describe({ org, user }: Caller): LogFields {
    return user === undefined ? { org: org.id } : { org: org.id, user: user.user_id };
  }

  protected call(route: RouteRecord, req: IncomingRequest, exchange: Exchange, { org, user }: Caller, input: Checked): Reply | Promise<Reply> {
    const client = this.clientOf(req.headers['user-agent'] ?? '');
    const ctx: ChatContext = { params: input.params, user, org, runtime: this.runtime, config: this.config, mailer: this.mailer, request: req, exchange, files: input.files, client, log: this.log };
    return (route as RouteRecord<any, any, 'chat'>).handler(ctx);
  }

  /** The client's name, as Zulip takes it from the User-Agent (its first word). */
  private clientOf(agent: string): string {
    let client = this.clients.get(agent);
    if (client === undefined) {
      client = agent.split(/[/ ]/)[0] || 'Unspecified';
      if (this.clients.size >= CACHE_LIMIT) this.clients.clear();
      this.clients.set(agent, client);
    }
    return client;
  }

  /**
   * The organization the Host names: a malformed Host is a 400 (Django's
   * `DisallowedHost`), an unknown subdomain a 404 (Zulip's `InvalidSubdomainError`).
   * A deactivated organization is still chosen: what it may answer is the route's
   * and the authentication's business.
   */
  private organization(req: IncomingRequest): OrgRecord {
    const host = req.headers.host ?? '';
    let sub = this.subdomains.get(host);
    if (sub === undefined) {
      sub = subdomainOf(host, this.config.externalHost);
      if (this.subdomains.size >= CACHE_LIMIT) this.subdomains.clear();
      this.subdomains.set(host, sub);
    }
    const server = this.runtime.server();
    if (sub === null) throw new ApiError('BAD_REQUEST', 'Invalid Host header');
    const id = server.bySubdomain.get(sub);
    const org = id === undefined ? undefined : server.orgs.get(id);
    if (!org) throw new ApiError('NONEXISTENT_SUBDOMAIN', 'Invalid subdomain');
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

  /**
   * HTTP Basic `email:api_key`, the key compared in constant time. As Zulip's
   * `authenticated_rest_api_view`, whatever the key check refuses (a wrong key, a
   * deactivated user or organization) is a 401 `UNAUTHORIZED` with the refusal's
   * message, not the refusal's own code.
   */
  private authenticate(req: IncomingRequest, org: OrgRecord): UserRecord {
    const header = req.headers.authorization;
    if (!header) throw new ApiError('UNAUTHORIZED', 'Not logged in: API authentication or user session required');
    const { email, key } = this.credentials(header);
    const orgCtx = this.runtime.org(org.id)!;
    const user = userByEmail(orgCtx, email);
    const matches = secretsEqual(key, user?.api_key ?? DUMMY_KEY);
    if (!user || !matches) throw new ApiError('UNAUTHORIZED', 'Invalid API key');
    if (org.deactivated) throw new ApiError('UNAUTHORIZED', REALM_DEACTIVATED_MSG);
    if (!user.is_active) throw new ApiError('UNAUTHORIZED', 'Account is deactivated');
    return user;
  }
}

/** The settings that hold a rate limit. */
type RateLimitSetting = { [K in keyof Config]: Config[K] extends RateLimit ? K : never }[keyof Config];

/**
 * Each rate limit class (`RouteRecord.rateClass`): the setting holding its windows,
 * what a request counts under (read once the parameters are checked), and whether a
 * success clears the count.
 */
const RATE_CLASSES: Record<RateClass, Omit<Limit<Caller>, 'limiter' | 'afterParams'> & { setting: RateLimitSetting }> = {
  // As Zulip's rate_limit_auth: every attempt counts against the username, a success forgets them.
  authenticate_by_username: { setting: 'rateLimitAuthenticate', key: (_req, who, params) => `${who.org.id}:${String(params.username).toLowerCase()}`, clearOnSuccess: true },
};

/** Zulip's `RealmDeactivatedError` message. */
const REALM_DEACTIVATED_MSG = 'This organization has been deactivated';

/** What a streamed upload body may carry beyond the file: multipart boundaries, part headers, small fields. */
export const STREAM_OVERHEAD_BYTES = 64 * 1024;

/** Entries kept by each small parse cache before it starts over. */
const CACHE_LIMIT = 10000;

/**
 * Decodes `Basic base64(email:key)` as Zulip's `get_basic_credentials`: a header that is
 * not two words, or whose credentials have no colon, is 401 `UNAUTHORIZED`; another
 * scheme is a 400 (its `JsonableError`, raised where only `ValueError` becomes a 401).
 */
function decodeBasic(header: string): { email: string; key: string } {
  const words = header.trim().split(/\s+/);
  if (words.length !== 2) throw new ApiError('UNAUTHORIZED', 'Invalid authorization header for basic auth');
  const [scheme, encoded] = words;
  if (scheme.toLowerCase() !== 'basic') throw new ApiError('BAD_REQUEST', 'This endpoint requires HTTP basic authentication.');
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new ApiError('UNAUTHORIZED', 'Invalid authorization header for basic auth');
  return { email: decoded.slice(0, colon), key: decoded.slice(colon + 1) };
}
