/**
 * The Prometheus metrics of one server (`GET /metrics`, see `endpoint.ts`).
 *
 * Each server counts in a registry of its own, so that several servers in one process
 * (the tests) never share or clash; the process's default metrics (CPU, memory, GC,
 * event-loop lag) are the process's, collected once into one process-wide registry,
 * and every scrape reports both.
 *
 * Counting stays off the hot path's bill:
 * - every route's histogram child is bound once at startup and kept with the route's
 *   compiled entry (`App.observeRoutes`), so a request costs a clock read and a bucket
 *   search with three additions in a bound series (`BoundHistogram`) that prom-client
 *   reads at scrape time, no label hashing;
 * - the log and the fan-out report once per batch (a group commit, a delivery pass);
 * - gauges (queues, parked polls, recovery) are read from existing state at scrape time.
 * The lower layers know no metrics library: they report through plain observer
 * interfaces (`LogObserver`, `StoreObserver`, `DeliveryObserver`, `RouteObserver`).
 */
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { DeliveryObserver } from '../../actors/event_queues/index.js';
import type { StoreObserver } from '../../snapshots/store.js';
import type { SnapshotInfo } from '../../snapshots/snapshot.js';
import type { BodyStore } from '../../snapshots/body_store.js';
import type { RouteObserver, RouteObserverOf } from '../http/app.js';
import type { RouteRecord } from '../http/route.js';
import { updatePresence } from '../routes/chat/presence.js';
import type { Store } from '../store.js';
import type { MemoryPressure } from '../memory/pressure.js';

/** Request latency buckets, in seconds: a poll answered from memory to a slow upload. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Disk latency buckets, in seconds: an fdatasync is about 1 ms here, with spikes past 10 ms. */
const DISK_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** Batch size buckets: records per group commit, queues per delivery pass. */
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000];
/** Snapshot duration buckets, in seconds. */
const SNAPSHOT_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** The labels of per-route metrics: the API, and the route record's method and path pattern. */
const ROUTE_LABELS = ['api', 'method', 'route'] as const;

/** The label of requests that match no route of their API (404, 405). */
export const UNMATCHED_ROUTE = 'unmatched';

let processRegistry: Registry | undefined;

/** The process's default metrics, collected once however many servers run in it. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** Every metric of one server, and the observers that feed them. */
export class Metrics {
  private readonly registry = new Registry();

  private readonly requestSeconds = new BoundHistogram(
    'parley_http_request_duration_seconds',
    'Time from a request entering the pipeline to its answer (to parking, for a long poll that waits), by route pattern; its _count is the request count',
    REQUEST_BUCKETS,
    this.registry,
  );
  private readonly rateLimitHits = this.counter('parley_rate_limit_hits_total', 'Requests refused with 429 by a rate limit, by route pattern', ROUTE_LABELS);
  private readonly presencePings = this.counter('parley_presence_pings_total', 'Presence reports received (POST /api/v1/users/me/presence)');
  private readonly eventsDelivered = this.counter('parley_events_delivered_total', 'Events pushed to event queues by delivery passes');
  private readonly pollsCompleted = this.counter('parley_polls_completed_total', 'Parked polls answered by delivery passes');
  private readonly fanoutQueues = this.histogram('parley_fanout_batch_queues', 'Queues reached by one delivery pass (the fan-out batch)', BATCH_BUCKETS);
  private readonly logAppendSeconds = this.histogram('parley_log_append_seconds', 'Per group commit, from its first record appended to the batch durable under the fsync policy', DISK_BUCKETS);
  private readonly logWriteSeconds = this.histogram('parley_log_write_seconds', 'The write of one group commit', DISK_BUCKETS);
  private readonly logSyncSeconds = this.histogram('parley_log_fdatasync_seconds', 'One fdatasync of the log (per group commit under fsync always, periodic under batch)', DISK_BUCKETS);
  private readonly logBatchRecords = this.histogram('parley_log_batch_records', 'Records per group commit; its _sum is the records appended', BATCH_BUCKETS);
  private readonly snapshotSeconds = this.histogram('parley_snapshot_duration_seconds', 'Writing one snapshot, from start to the file in place', SNAPSHOT_BUCKETS);
  private readonly snapshotSliceSeconds = this.gauge('parley_snapshot_longest_slice_seconds', 'The longest event-loop stall of the last snapshot: its longest encoding slice between yields');
  private readonly snapshotBytes = this.gauge('parley_snapshot_bytes', 'Size of the last snapshot written');

  /** The log's and the snapshots' observer, for `openStore`. */
  readonly store: StoreObserver = {
    committed: (records, waitSeconds, writeSeconds) => {
      this.logBatchRecords.observe(records);
      this.logAppendSeconds.observe(waitSeconds);
      this.logWriteSeconds.observe(writeSeconds);
    },
    synced: (seconds) => this.logSyncSeconds.observe(seconds),
    snapshotWritten: (info: SnapshotInfo) => {
      this.snapshotSeconds.observe(info.durationMs / 1000);
      this.snapshotSliceSeconds.set(info.longestSliceMs / 1000);
      this.snapshotBytes.set(info.bytes);
    },
  };

  /** The event queues' observer, for the runtime. */
  readonly delivery: DeliveryObserver = {
    delivered: (queues, events, polls) => {
      this.fanoutQueues.observe(queues);
      this.eventsDelivered.inc(events);
      this.pollsCompleted.inc(polls);
    },
  };

  /** Each route's observer, bound once (see `App.observeRoutes`). */
  readonly routes: RouteObserverOf = (api, route) => this.routeObserver(api, route);

  private routeObserver(api: string, route: RouteRecord | null): RouteObserver {
    const labels = route ? { api, method: route.method, route: route.path } : { api, method: '', route: UNMATCHED_ROUTE };
    const latency = this.requestSeconds.child(labels);
    const limited = this.rateLimitHits.labels(labels);
    const pings = route === updatePresence ? this.presencePings : undefined;
    return {
      answered: pings
        ? (seconds) => {
            latency.observe(seconds);
            pings.inc();
          }
        : (seconds) => latency.observe(seconds),
      rateLimited: () => limited.inc(),
    };
  }

  /**
   * Adds the gauges of recovery in progress, before it starts: the seq replayed so far
   * (the newest fact applied, once serving) and whether the server is ready.
   */
  watchStart(runtime: { readonly lastSeq: number }, ready: () => boolean): void {
    this.gauge('parley_log_last_seq', 'The seq of the newest fact applied: during recovery, how far replay has come', function collect() {
      this.set(runtime.lastSeq);
    });
    this.gauge('parley_ready', '1 while the server serves; 0 while it recovers at start and while it drains at shutdown (as GET /readyz)', function collect() {
      this.set(ready() ? 1 : 0);
    });
  }

  /** Adds the memory pressure's metrics, read at each scrape. */
  watchMemory(memory: MemoryPressure): void {
    this.gauge('parley_memory_pressure', '1 while the heap is under memory pressure (over 75% of the limit after a major GC, until under 60%): requests that grow state get 503; 0 otherwise', function collect() {
      this.set(memory.active ? 1 : 0);
    });
    this.gauge('parley_memory_limit_bytes', "The heap's limit that memory pressure is measured against: the old generation's, set by --memory-limit-mib", function collect() {
      this.set(memory.limitBytes);
    });
    this.gauge('parley_memory_used_bytes', "The old generation in use at the last reading: the live data after a major GC, an upper bound of it between them", function collect() {
      this.set(memory.usedBytes);
    });
    new Counter({
      name: 'parley_memory_refused_total',
      help: 'Requests refused with 503 under memory pressure',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(memory.refused);
      },
    });
    new Counter({
      name: 'parley_memory_gc_requests_total',
      help: 'Major GCs the server asked V8 for under memory pressure, to tell garbage from live data (at most every 5 s)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(memory.gcRequests);
      },
    });
  }

  /** Adds the gauges read from a running server's state at each scrape. */
  watch(store: Store): void {
    const { queues } = store.runtime;
    const gauge = (name: string, help: string, read: () => number): void => {
      this.gauge(name, help, function collect() {
        this.set(read());
      });
    };
    gauge('parley_event_queues', 'Registered event queues', () => queues.size);
    gauge('parley_event_queues_passivated', 'Registered event queues whose actor is passivated (asleep until their next batch of events; a queue with a parked poll is, unless it is hot: its last two batches less than a second apart)', () => queues.size - queues.activeCount);
    gauge('parley_parked_polls', 'GET /events requests parked, waiting for an event', () => queues.parkedCount);
    gauge('parley_recovery_replayed_facts', 'Facts replayed from the log at the last start', () => store.recovery.replayed);
    gauge('parley_recovery_duration_seconds', 'How long recovery (snapshot load and log replay) took at the last start', () => store.recovery.ms / 1000);
  }

  /**
   * Adds the body store's metrics, read at each scrape: its size on disk, its cache
   * against the cache's bound (`--body-cache-mib`), and how reads were answered.
   */
  watchBodies(store: Pick<BodyStore, 'stats'>, cacheLimitBytes: number): void {
    const stats = (): ReturnType<BodyStore['stats']> => store.stats();
    const gauge = (name: string, help: string, read: () => number): void => {
      this.gauge(name, help, function collect() {
        this.set(read());
      });
    };
    const counter = (name: string, help: string, read: () => number): void => {
      new Counter({ name, help, registers: [this.registry], collect() {
        this.reset();
        this.inc(read());
      } });
    };
    gauge('parley_body_store_bytes', 'Bytes of message bodies on disk (every body segment, versions no message holds any more included until a compaction)', () => stats().bytes);
    gauge('parley_body_store_segments', 'Body segment files', () => stats().segments);
    gauge('parley_body_cache_bytes', 'Bytes of message bodies held in memory by the body cache', () => stats().cacheBytes);
    gauge('parley_body_cache_limit_bytes', "The body cache's bound (--body-cache-mib)", () => cacheLimitBytes);
    counter('parley_body_cache_hits_total', 'Body reads the cache answered', () => stats().hits);
    counter('parley_body_cache_misses_total', 'Body reads that went to the disk', () => stats().misses);
    counter('parley_body_disk_reads_total', 'Reads of body segment files (one read may bring many bodies)', () => stats().diskReads);
  }

  /** A histogram without labels. */
  private histogram(name: string, help: string, buckets: number[]): Series {
    return new BoundHistogram(name, help, buckets, this.registry).child({});
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** A gauge; `collect`, when given, sets it at each scrape. */
  private gauge(name: string, help: string, collect?: (this: Gauge) => void): Gauge {
    return new Gauge({ name, help, collect, registers: [this.registry] });
  }

  /** The Prometheus text content type. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric of the process and of this server, in Prometheus text format. */
  async scrape(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }
}

/** One label set's buckets of a `BoundHistogram`. */
class Series {
  /** Observations at or under each bucket's bound (not cumulative: summed at scrape). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly labels: Record<string, string>, private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    if (i < bounds.length) this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

/**
 * A histogram as prom-client would show it, for the hot paths: each label set's series
 * is bound once, and observing is a bucket search and three additions, with no label
 * hashing (prom-client's histograms hash their labels on every `observe`, 1.25 us per
 * request in a profile of the send bench). It is registered as a custom metric that
 * prom-client reads at scrape time.
 */
class BoundHistogram {
  private readonly series: Series[] = [];

  constructor(private readonly name: string, private readonly help: string, private readonly bounds: readonly number[], registry: Registry) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of one label set, created now and kept. */
  child(labels: Record<string, string>): Series {
    const s = new Series(labels, this.bounds);
    this.series.push(s);
    return s;
  }

  /** What prom-client's registry reads: each series' cumulative buckets, sum and count. */
  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> } {
    const values = [];
    for (const s of this.series) {
      // A route nobody has called yet stays out of the scrape; an unlabelled histogram shows its zeros.
      if (s.count === 0 && Object.keys(s.labels).length > 0) continue;
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i];
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: this.bounds[i] }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }

  reset(): void {}
}
