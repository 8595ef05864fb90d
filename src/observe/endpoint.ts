/**
 * `GET /metrics`, in Prometheus text format. It is served in one of two places:
 * - on the chat port (the default), where `/metrics` is answered before anything else
 *   looks at the request: whatever its Host, it is no organization's and not the
 *   board's, and the chat API has no route there;
 * - on a listener of its own (`--metrics-port`), which answers nothing else; the chat
 *   port then has no `/metrics` at all.
 * With `--metrics-token`, a scrape must send `Authorization: Bearer <token>`; without
 * it, or with another token, it gets 401 with `WWW-Authenticate: Bearer`, as a
 * Prometheus `authorization` block expects.
 */
import { secretsEqual } from '../../actors/rules/passwords.js';
import { listen, type Handler, type Listener } from '../http/uws.js';
import type { IncomingRequest, OutgoingResponse } from '../http/types.js';
import type { Metrics } from './metrics.js';

/** Where the metrics are served. */
export const METRICS_PATH = '/metrics';

/** Answers a request for `METRICS_PATH`. */
export type MetricsHandler = (req: IncomingRequest) => OutgoingResponse | Promise<OutgoingResponse>;

function plain(status: number, text: string, headers: Array<[string, string]> = []): OutgoingResponse {
  return { status, headers: [['Content-Type', 'text/plain; charset=utf-8'], ...headers], body: `${text}\n` };
}

/** Why a scrape is refused by the token (a 401), or undefined when it may read. */
function refusal(req: IncomingRequest, token: string): OutgoingResponse | undefined {
  if (token === '') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (match && secretsEqual(match[1], token)) return undefined;
  const challenge = match ? 'Bearer realm="metrics", error="invalid_token"' : 'Bearer realm="metrics"';
  return plain(401, match ? 'Unauthorized: wrong metrics token' : 'Unauthorized: a metrics token is required', [['WWW-Authenticate', challenge]]);
}

/** Serves `metrics` to GET and HEAD, behind `token` unless it is empty. */
export function metricsHandler(metrics: Metrics, token: string): MetricsHandler {
  return (req) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(405, 'Method Not Allowed', [['Allow', 'GET, HEAD']]);
    const refused = refusal(req, token);
    if (refused) return refused;
    return metrics.scrape().then((body) => ({ status: 200, headers: [['Content-Type', metrics.contentType]], body }));
  };
}

/** A handler that answers `METRICS_PATH` with `serve` and passes every other request to `next`. */
export function withMetrics(serve: MetricsHandler, next: Handler): Handler {
  return (req, exchange) => (req.path === METRICS_PATH ? serve(req) : next(req, exchange));
}

/** Starts the metrics' own listener: `METRICS_PATH`, and 404 for anything else. */
export function listenMetrics(host: string, port: number, serve: MetricsHandler): Promise<Listener> {
  return listen(
    { host, port, maxBodyBytes: 0, tooLarge: () => plain(413, 'Payload Too Large') },
    (req) => (req.path === METRICS_PATH ? serve(req) : plain(404, 'Not Found')),
  );
}
