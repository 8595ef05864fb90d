/**
 * Building a large answer in slices: a handler maps its items a slice at a time and lets
 * the event loop run in between (`setImmediate`), so that other requests are served
 * while a page of thousands of messages is built. The answer is the same as one
 * `map` would give; only the time it takes is spread.
 */
import { ApiError } from '../../actors/shared/errors.js';

/** How much of an answer is built in one turn of the event loop; tests change it. */
export const ANSWER_SLICE = {
  /** Items mapped before the build yields. */
  items: 500,
  /** Milliseconds of building before it yields, whatever the count; the clock is read every 16 items. */
  ms: 4,
  /** Called each time the build yields (tests count the slices). */
  onYield: undefined as (() => void) | undefined,
};

/**
 * `items.map(fn)`, yielding to the event loop between slices. Throws the scan's
 * "Request aborted by the client" once `aborted()` says the client went away.
 */
export async function mapInSlices<T, U>(items: readonly T[], fn: (item: T) => U, aborted?: () => boolean): Promise<U[]> {
  const out: U[] = new Array<U>(items.length);
  let started = performance.now();
  let count = 0;
  for (let i = 0; i < items.length; i++) {
    if (count >= ANSWER_SLICE.items || ((count & 15) === 15 && performance.now() - started >= ANSWER_SLICE.ms)) {
      ANSWER_SLICE.onYield?.();
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (aborted?.()) throw new ApiError('BAD_REQUEST', 'Request aborted by the client');
      count = 0;
      started = performance.now();
    }
    out[i] = fn(items[i]);
    count++;
  }
  return out;
}
