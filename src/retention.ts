/**
 * The retention pass (Zulip's `archive_messages`, which its cron runs daily): in every
 * organization, every channel's messages past their retention period, then the direct
 * messages past the organization's, deleted a batch per decision
 * (`actors/areas/message_retention.ts`) until none is left. Requests are served between
 * batches; a pass cut short (a stop, a crash) is finished by the next.
 */
import type { Logger } from '../actors/core/logger.js';
import type { Runtime } from '../actors/runtime/runtime.js';

/** How often the pass runs. */
export const RETENTION_PASS_MS = 3600_000;

/** Runs one pass over every organization; answers how many messages it deleted. `stopped` ends it between batches. */
export async function expireMessages(runtime: Runtime, stopped: () => boolean = () => false): Promise<number> {
  let deleted = 0;
  for (const org of [...runtime.server().orgs.keys()]) {
    for (const streamId of [...runtime.channelIdsOf(org)]) {
      for (let more = true; more && !stopped(); ) {
        const r = await runtime.execute({ type: 'EXPIRE_CHANNEL_MESSAGES', org, stream_id: streamId });
        deleted += r.deleted;
        more = r.more;
      }
    }
    for (let more = true; more && !stopped(); ) {
      const r = await runtime.execute({ type: 'EXPIRE_DIRECT_MESSAGES', org });
      deleted += r.deleted;
      more = r.more;
    }
  }
  return deleted;
}

/** Runs the pass now and then every `RETENTION_PASS_MS`, one at a time; `stop` ends it. */
export function scheduleMessageRetention(runtime: Runtime, log: Logger): { stop(): void } {
  let stopped = false;
  let running = false;
  const pass = (): void => {
    if (running || stopped) return;
    running = true;
    expireMessages(runtime, () => stopped).then(
      (deleted) => { if (deleted > 0) log.info({ event: 'retention.messages_deleted', messages: deleted }, `retention: ${deleted} messages past their retention period deleted`); },
      (err: Error) => log.error({ event: 'retention.failed', error: err.message }, `retention pass failed: ${err.message}`),
    ).finally(() => { running = false; });
  };
  pass();
  const timer = setInterval(pass, RETENTION_PASS_MS);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
