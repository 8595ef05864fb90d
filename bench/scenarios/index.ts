/** Every scenario, in the order a full run executes them. */
import type { Scenario } from '../scenario.js';
import { capacity } from './capacity.js';
import { correctness } from './correctness.js';
import { durability } from './durability.js';
import { fanout } from './fanout.js';
import { heartbeat } from './heartbeat.js';
import { idleQueues } from './idle_queues.js';
import { parked } from './parked.js';
import { poll } from './poll.js';
import { presence } from './presence.js';
import { send } from './send.js';
import { sizing } from './sizing.js';
import { stall } from './stall.js';

export const scenarios: Scenario[] = [fanout, send, poll, presence, idleQueues, sizing, parked, heartbeat, correctness, durability, stall, capacity];

/** The scenarios named (in run order), or without names every scenario but those that run only by name. */
export function selectScenarios(names: string[] | null): Scenario[] {
  return scenarios.filter((s) => (names === null ? !s.onlyByName : names.includes(s.name)));
}
