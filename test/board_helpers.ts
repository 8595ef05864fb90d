/**
 * Fixtures of the message board tests: an in-process board (no socket) with an
 * injected clock, and a request helper over `inject`.
 */
import type { BoardSwitch } from '../actors/shared/board_types.js';
import { defaultRuntimeOptions, Runtime, volatileSink, type FactSink } from '../actors/runtime/runtime.js';
import { BoardApp } from '../src/board/app.js';
import type { BoardSettings } from '../src/http/route.js';
import { inject } from '../src/http/inject.js';
import { boardRoutes } from '../src/routes/board/index.js';
import { lineLogger } from '../actors/core/logger.js';

export interface BoardResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  json: any;
}

/** A request: `json` is sent as an application/json body unless `body` is given. */
export interface BoardRequest {
  json?: unknown;
  body?: string | Buffer;
  headers?: Record<string, string>;
  remoteAddress?: string;
}

export interface BoardFixture {
  runtime: Runtime;
  app: BoardApp;
  /** The injected clock, in ms. */
  clock: { t: number };
  /** Internal errors the app logged; a test that expects none checks it is empty. */
  logs: string[];
  call(method: string, url: string, r?: BoardRequest): Promise<BoardResult>;
  setSwitch(name: BoardSwitch, on: boolean): Promise<unknown>;
  stop(): void;
}

/** Rate limits are off unless a test asks for them. */
export const NO_LIMITS: BoardSettings = { nonceTtlSecs: 300, publishLimit: { requests: 0, windowSecs: 60 }, messageLimit: { requests: 0, windowSecs: 60 } };

/** Wraps a runtime (new, or one from a store) in a board app and a request helper. */
export function boardOn(runtime: Runtime, clock: { t: number }, settings: Partial<BoardSettings> = {}): BoardFixture {
  const logs: string[] = [];
  const app = new BoardApp(boardRoutes, runtime, { ...NO_LIMITS, ...settings }, lineLogger((line) => logs.push(line), 'error'));
  const call: BoardFixture['call'] = (method, url, r = {}) => {
    const headers: Record<string, string> = r.json !== undefined ? { 'content-type': 'application/json' } : {};
    return inject(app, {
      method,
      url,
      body: r.body ?? (r.json !== undefined ? JSON.stringify(r.json) : undefined),
      headers: { ...headers, ...(r.headers ?? {}) },
      remoteAddress: r.remoteAddress,
    });
  };
  const setSwitch = (name: BoardSwitch, on: boolean): Promise<unknown> => runtime.execute({ type: 'SET_BOARD_SWITCH', name, on });
  return { runtime, app, clock, logs, call, setSwitch, stop: () => runtime.stop() };
}

/** An in-process board on a fresh runtime. */
export function boardFixture(opts: { settings?: Partial<BoardSettings>; sink?: FactSink } = {}): BoardFixture {
  const clock = { t: 1_800_000_000_000 };
  const runtime = new Runtime({ ...defaultRuntimeOptions(opts.sink ?? volatileSink), now: () => clock.t });
  return boardOn(runtime, clock, opts.settings);
}

/** Issues a write-challenge and returns its nonce. */
export async function challenge(f: BoardFixture, remoteAddress?: string): Promise<string> {
  const res = await f.call('GET', '/compat/v1/write-challenge', { remoteAddress });
  if (res.status !== 200) throw new Error(`write-challenge failed: ${res.body}`);
  return res.json.challenge;
}

/** The URL that publishes `message` with `nonce`. */
export function publishUrl(nonce: string, query: Record<string, string>): string {
  return `/compat/v1/publish/${nonce}?${new URLSearchParams(query).toString()}`;
}
