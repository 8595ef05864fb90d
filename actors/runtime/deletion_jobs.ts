/**
 * Runs the organizations' message deletion jobs (`actors/areas/deletion_jobs.ts`): step
 * by step, each step one decision whose deletions and progress land in one durable
 * batch, until the job's last step removes it. The jobs themselves are organization
 * state (logged, snapshotted); this keeps only which are running now.
 *
 * Once started (after recovery), it runs each job as soon as the fact that records it is
 * applied, and at start every job recovery found still recorded: a job a `kill -9` cut
 * short is resumed and finished. `settled` runs a job (if nothing runs it yet) and
 * resolves when it is done: the request that asked for it answers then. A step that
 * fails stops its job's run, logged; the job stays recorded and is resumed at the next
 * start. Steps are idempotent: running one twice does nothing the second time.
 */
import type { Logger } from '../core/logger.js';
import type { OrgContext } from '../kinds/organization.js';

/** What the runner reads and does, given by the runtime. */
export interface DeletionJobsHost {
  orgIds(): Iterable<number>;
  org(orgId: number): OrgContext | undefined;
  /** The job's step in one channel (its channel's actor decides it). */
  stepChannel(orgId: number, streamId: number, jobId: number): Promise<unknown>;
  /** The job's last step (the organization's actor decides it). */
  finish(orgId: number, jobId: number): Promise<unknown>;
  log: Logger;
}

export class DeletionJobs {
  /** Runs under way, by `org/job`. */
  private readonly running = new Map<string, Promise<void>>();
  private started = false;
  private stopped = false;

  constructor(private readonly host: DeletionJobsHost) {}

  /** Runs every recorded job, and from now on each new one as soon as it is recorded. */
  start(): void {
    this.started = true;
    for (const orgId of this.host.orgIds()) {
      for (const job of this.host.org(orgId)?.deletionJobs.values() ?? []) {
        this.host.log.info({ event: 'deletion_job.resumed', org: orgId, job: job.id, channels: job.channels.length }, `deletion job ${orgId}/${job.id} resumed: ${job.channels.length} channels to go, then the direct messages`);
        void this.settled(orgId, job.id).catch(() => {});
      }
    }
  }

  /** No further step starts (runs under way stop after their current step). */
  stop(): void {
    this.started = false;
    this.stopped = true;
  }

  /** Looks at a fact just applied: a job just recorded is run, once started. */
  observe(fact: { type: string }): void {
    if (!this.started || fact.type !== 'DeletionJobStarted') return;
    const { org, job } = fact as unknown as { org: number; job: { id: number } };
    // After the current decision's commit: the run's first step is decided after it.
    queueMicrotask(() => void this.settled(org, job.id).catch(() => {}));
  }

  /** Runs the job unless it is running, and resolves once it is done (rejects with a step's error). */
  settled(orgId: number, jobId: number): Promise<void> {
    const key = `${orgId}/${jobId}`;
    let run = this.running.get(key);
    if (!run) {
      run = this.run(orgId, jobId).finally(() => this.running.delete(key));
      this.running.set(key, run);
    }
    return run;
  }

  /** How many runs are under way (for tests). */
  get size(): number {
    return this.running.size;
  }

  private async run(orgId: number, jobId: number): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const job = this.host.org(orgId)?.deletionJobs.get(jobId);
      if (!job) return;
      try {
        // Each step crosses its channel off, or ends the job (unless a channel came back on it).
        if (job.channels.length > 0) await this.host.stepChannel(orgId, job.channels[0], jobId);
        else await this.host.finish(orgId, jobId);
      } catch (err) {
        const error = (err as Error)?.message ?? String(err);
        this.host.log.error({ event: 'deletion_job.step_failed', org: orgId, job: jobId, error }, `deletion job ${orgId}/${jobId}: a step failed (${error}); the job is resumed at the next start`);
        throw err;
      }
    }
  }
}
