/**
 * Colours for runs: distinct on light and dark backgrounds. A run keeps its
 * colour while it stays selected; new runs take the first free colour.
 */
export const PALETTE: readonly string[] = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#59a14f',
  '#b07aa1',
  '#76b7b2',
  '#edc948',
  '#ff9da7',
  '#9c755f',
  '#8cd17d',
  '#bab0ac',
  '#d37295',
];

export function assignColors(ids: readonly string[], previous: ReadonlyMap<string, string>): Map<string, string> {
  const result = new Map<string, string>();
  const used = new Set<string>();
  for (const id of ids) {
    const colour = previous.get(id);
    if (colour !== undefined && !used.has(colour)) {
      result.set(id, colour);
      used.add(colour);
    }
  }
  let next = 0;
  for (const id of ids) {
    if (result.has(id)) continue;
    let colour: string | undefined;
    for (let tries = 0; tries < PALETTE.length; tries++) {
      const candidate = PALETTE[(next + tries) % PALETTE.length]!;
      if (!used.has(candidate)) {
        colour = candidate;
        next = (next + tries + 1) % PALETTE.length;
        break;
      }
    }
    // more runs than colours: reuse in order
    colour ??= PALETTE[result.size % PALETTE.length]!;
    result.set(id, colour);
    used.add(colour);
  }
  return result;
}
