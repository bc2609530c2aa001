/**
 * Where the charts of many keys go, without making them: sections by key
 * prefix cut into blocks of a few rows of cards, each block as tall as its
 * cards will be, so the page scrolls through 10,000 keys while holding only
 * the charts near the screen (chartSections.ts).
 */

/** The chart grid's geometry (style.css `.chart-block`): a card at least this wide, this gap, this padding. */
export const GRID_GEOMETRY = { minCardPx: 520, gapPx: 12, paddingPx: 12 };

/** Keys asked with the sections: a run of up to this many keys is laid out from one answer. */
export const FIRST_KEYS = 60;

/** Rows of cards per block: what is made (and released) at once. */
export const BLOCK_ROWS = 3;

/** A card's height until one was measured (header + 290 px canvas + borders). */
export const CARD_HEIGHT_GUESS_PX = 333;

/** Cards per row in a grid this wide (CSS px), as `repeat(auto-fit, minmax(520px, 1fr))` lays them. */
export function gridColumns(widthPx: number): number {
  const { minCardPx, gapPx, paddingPx } = GRID_GEOMETRY;
  return Math.max(1, Math.floor((widthPx - 2 * paddingPx + gapPx) / (minCardPx + gapPx)));
}

/** One block: `count` keys from `offset` in the order of the matching keys. */
export interface BlockSpan {
  offset: number;
  count: number;
}

/** A section's keys `[offset, offset + keys)` cut into blocks of `perBlock`. */
export function blocksOf(section: { offset: number; keys: number }, perBlock: number): BlockSpan[] {
  const out: BlockSpan[] = [];
  for (let i = 0; i < section.keys; i += perBlock) out.push({ offset: section.offset + i, count: Math.min(perBlock, section.keys - i) });
  return out;
}

/** The height of a block of `count` cards (its bottom padding included). */
export function blockHeight(count: number, columns: number, cardPx: number): number {
  const rows = Math.ceil(count / Math.max(1, columns));
  return rows * (cardPx + GRID_GEOMETRY.gapPx);
}

/** The ranges of keys to ask for so that `[offset, offset + count)` is known, `have` telling which are. */
export function missingRange(offset: number, count: number, have: (index: number) => boolean): BlockSpan | null {
  let first = -1;
  let last = -1;
  for (let i = offset; i < offset + count; i++) {
    if (have(i)) continue;
    if (first < 0) first = i;
    last = i;
  }
  return first < 0 ? null : { offset: first, count: last - first + 1 };
}
