/** Timers that gather bursts of calls into one: host-free (setTimeout, or requestAnimationFrame where there is one). */
/** Calls fn once, `ms` after the last call. */
export function debounce<A extends unknown[]>(fn: (...args: A) => void, ms: number): ((...args: A) => void) & { cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const wrapped = (...args: A) => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn(...args);
    }, ms);
  };
  wrapped.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return wrapped;
}

/** Calls fn once, `ms` after the first of a burst of calls: unlike debounce, a steady stream cannot postpone it forever. */
export function coalesce(fn: () => void, ms: number): (() => void) & { cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const wrapped = () => {
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, ms);
  };
  wrapped.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return wrapped;
}

/**
 * Calls fn soon (in a later task, so a burst of calls in one task makes one call), but
 * never sooner than `ms` after its previous call: at most one call per `ms`, and none
 * postponed when the previous one was long enough ago (unlike coalesce, which always waits).
 */
export function throttle(
  fn: () => void,
  ms: number,
  now: () => number = () => Date.now(),
): (() => void) & { cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last = -Infinity;
  const wrapped = () => {
    if (timer !== null) return;
    timer = setTimeout(
      () => {
        timer = null;
        last = now();
        fn();
      },
      Math.max(0, last + ms - now()),
    );
  };
  wrapped.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return wrapped;
}

type FrameScheduler = { request(cb: () => void): number; cancel(handle: number): void };

const animationFrames: FrameScheduler =
  typeof requestAnimationFrame === 'function'
    ? { request: (cb) => requestAnimationFrame(cb), cancel: (h) => cancelAnimationFrame(h) }
    : { request: (cb) => setTimeout(cb, 0) as unknown as number, cancel: (h) => clearTimeout(h) };

/**
 * Calls fn once in the next animation frame, however many calls came before it: a
 * gesture that sends many events in one frame is seen once per frame, with no wait
 * beyond the frame (where there are no frames, in the next task).
 */
export function onceAFrame(fn: () => void, frames: FrameScheduler = animationFrames): (() => void) & { cancel(): void } {
  let handle: number | null = null;
  const wrapped = () => {
    if (handle !== null) return;
    handle = frames.request(() => {
      handle = null;
      fn();
    });
  };
  wrapped.cancel = () => {
    if (handle !== null) frames.cancel(handle);
    handle = null;
  };
  return wrapped;
}
