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

/**
 * Calls fn once when the current task's script ends (a microtask), however many calls came in
 * it: the events one input dispatches are seen once, and before the frame that follows runs
 * (whose callbacks may paint for tens of ms).
 */
export function onceATask(fn: () => void): (() => void) & { cancel(): void } {
  let pending = false;
  let generation = 0;
  const wrapped = () => {
    if (pending) return;
    pending = true;
    const mine = ++generation;
    queueMicrotask(() => {
      if (mine !== generation) return; // cancelled, or called again after a cancel
      pending = false;
      fn();
    });
  };
  wrapped.cancel = () => {
    pending = false;
    generation += 1;
  };
  return wrapped;
}
