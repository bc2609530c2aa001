/**
 * Delay before reconnect attempt `attempt` (0 = first retry): doubling from
 * minMs up to maxMs, with ±20% jitter so many pages do not reconnect in step.
 */
export function backoffDelayMs(
  attempt: number,
  minMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const base = Math.min(maxMs, minMs * Math.pow(2, Math.max(0, Math.min(attempt, 30))));
  const jitter = 1 + (random() * 2 - 1) * 0.2;
  return Math.round(Math.min(maxMs, Math.max(minMs, base * jitter)));
}
