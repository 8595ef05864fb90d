/**
 * `parley board ...`: the board's runtime switches, from the operator CLI.
 *
 *   parley board guestbook on|off [--data-dir DIR]
 *   parley board compat on|off [--data-dir DIR]
 *   parley board status [--data-dir DIR]
 *
 * Each command asks the running server that holds DIR over its control socket, so a
 * switch takes effect at once, without a restart. When no server holds DIR, it edits
 * DIR offline: the switch change is a fact in the log like any other, so the next
 * start sees it.
 */
import { existsSync } from 'node:fs';
import type { BoardSwitch } from '../../actors/shared/board_types.js';
import { BOARD_SWITCHES } from '../../actors/shared/board_types.js';
import { defaultRuntimeOptions, Runtime, volatileSink } from '../../actors/runtime/runtime.js';
import { terminalLog } from '../logging.js';
import { recover } from '../store.js';
import { printFromServer, type ControlHandler } from '../control.js';
import { openOffline } from './data_commands.js';

/** Both switches, as the CLI shows them. */
export type BoardStatus = Record<BoardSwitch, 'on' | 'off'>;

function statusOf(runtime: Runtime): BoardStatus {
  const s = runtime.board().switches;
  return { guestbook: s.guestbook ? 'on' : 'off', compat: s.compat ? 'on' : 'off' };
}

/** Turns a switch on or off through the board actor; answers with both switches. */
export async function setBoardSwitch(runtime: Runtime, name: BoardSwitch, on: boolean): Promise<BoardStatus & { changed: boolean }> {
  const result = await runtime.execute({ type: 'SET_BOARD_SWITCH', name, on });
  return { ...statusOf(runtime), changed: result.changed };
}

function switchArgs(args: Record<string, unknown>): { name: BoardSwitch; on: boolean } {
  const name = args.name;
  if (typeof name !== 'string' || !(BOARD_SWITCHES as readonly string[]).includes(name)) throw new Error(`unknown board switch '${String(name)}'`);
  if (typeof args.on !== 'boolean') throw new Error('on must be true or false');
  return { name: name as BoardSwitch, on: args.on };
}

/** The control-socket commands a running server answers for the board. */
export function boardControlHandlers(runtime: Runtime): Record<string, ControlHandler> {
  return {
    'board-switch': (args) => {
      const { name, on } = switchArgs(args);
      return setBoardSwitch(runtime, name, on);
    },
    'board-status': () => statusOf(runtime),
  };
}

/** `parley board guestbook|compat on|off`: online through the server, or offline on DIR. */
export async function boardSwitchCommand(dataDir: string, name: BoardSwitch, on: boolean): Promise<void> {
  if (await printFromServer(dataDir, { command: 'board-switch', args: { name, on } })) return;
  const store = openOffline(dataDir);
  try {
    console.log(JSON.stringify({ ...(await setBoardSwitch(store.runtime, name, on)), offline: true }));
  } finally {
    await store.close();
  }
}

/** `parley board status`: asks the running server, or reads DIR without changing it. */
export async function boardStatusCommand(dataDir: string): Promise<void> {
  if (await printFromServer(dataDir, { command: 'board-status' })) return;
  if (!existsSync(dataDir)) throw new Error(`no data directory at ${dataDir}`);
  const runtime = new Runtime(defaultRuntimeOptions(volatileSink));
  try {
    recover(runtime, dataDir, { skipCorrupt: false, log: terminalLog });
    console.log(JSON.stringify({ ...statusOf(runtime), offline: true }));
  } finally {
    runtime.stop();
  }
}
