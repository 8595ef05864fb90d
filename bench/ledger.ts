/**
 * The bookkeeping of the correctness scenario. `SendLog` records every acknowledged
 * send; a `QueueLedger` per queue records what the queue delivered and checks, as
 * events arrive, that event ids run 0, 1, 2... with no gap or repeat and that message
 * ids only increase. `verify` then checks what can only be judged at the end: each
 * expected message delivered exactly once, each sender's messages in send order, and
 * each message's content matching what its sender sent.
 */
import type { ApiEvent } from './api.js';

/** Who sent a message, and where it stood in that sender's sequence. */
export interface SentMessage {
  sender: number;
  seq: number;
}

/** Every acknowledged send, by message id. */
export class SendLog {
  readonly byId = new Map<number, SentMessage>();

  add(messageId: number, sender: number, seq: number): void {
    this.byId.set(messageId, { sender, seq });
  }

  /** The token a message's content carries, to match events to sends. */
  static token(sender: number, seq: number): string {
    return `bench-s${sender}-m${seq}`;
  }
}

/** What one queue delivered, checked as it arrives. */
export class QueueLedger {
  private nextEventId = 0;
  private lastMessageId: number;
  /** Message ids in arrival order. */
  readonly messages: number[] = [];
  private readonly contents = new Map<number, string>();
  private readonly seen = new Set<number>();
  heartbeats = 0;

  /**
   * `floor` is the newest message id in the queue's initial state: the queue must get
   * every later message and none of the earlier ones.
   */
  constructor(readonly queueId: string, readonly floor: number, private readonly report: (violation: string) => void) {
    this.lastMessageId = floor;
  }

  /** The cursor the next poll should acknowledge. */
  get lastEventId(): number {
    return this.nextEventId - 1;
  }

  accept(events: ApiEvent[]): void {
    for (const e of events) {
      if (e.id !== this.nextEventId) {
        this.report(`queue ${this.queueId}: expected event id ${this.nextEventId}, got ${e.id} (${e.id < this.nextEventId ? 'repeated or reordered' : 'gap: events lost'})`);
      }
      this.nextEventId = Math.max(this.nextEventId, e.id + 1);
      if (e.type === 'heartbeat') this.heartbeats++;
      if (e.type !== 'message' || !e.message) continue;
      const id = e.message.id;
      if (this.seen.has(id)) {
        this.report(`queue ${this.queueId}: message ${id} delivered twice`);
        continue;
      }
      if (id <= this.lastMessageId) this.report(`queue ${this.queueId}: message ${id} arrived after message ${this.lastMessageId} (out of order, or older than the queue)`);
      this.seen.add(id);
      this.lastMessageId = Math.max(this.lastMessageId, id);
      this.messages.push(id);
      this.contents.set(id, e.message.content);
    }
  }

  /** Message ids the queue should have delivered but has not. */
  missing(log: SendLog): number[] {
    const out: number[] = [];
    for (const id of log.byId.keys()) if (id > this.floor && !this.seen.has(id)) out.push(id);
    return out.sort((a, b) => a - b);
  }

  /** End-of-run checks: completeness, per-sender order, contents. */
  verify(log: SendLog): void {
    const missing = this.missing(log);
    if (missing.length > 0) this.report(`queue ${this.queueId}: ${missing.length} messages never delivered (first: ${missing.slice(0, 5).join(', ')})`);
    const lastSeq = new Map<number, number>();
    for (const id of this.messages) {
      const sent = log.byId.get(id);
      if (!sent) {
        this.report(`queue ${this.queueId}: message ${id} was delivered but never acknowledged to its sender`);
        continue;
      }
      const previous = lastSeq.get(sent.sender) ?? -1;
      if (sent.seq <= previous) this.report(`queue ${this.queueId}: sender ${sent.sender}'s message #${sent.seq} arrived after #${previous}`);
      lastSeq.set(sent.sender, sent.seq);
      const content = this.contents.get(id) ?? '';
      if (!content.includes(SendLog.token(sent.sender, sent.seq))) this.report(`queue ${this.queueId}: message ${id} has content ${JSON.stringify(content.slice(0, 80))}, not sender ${sent.sender}'s #${sent.seq}`);
    }
  }
}
