// Pure operations on the lines a text view shows: which parts of a long line to show around its
// changes and search hits, finding a query, folding the source tables of XLA's HLO, and the
// names of downloaded files. No DOM: the node tests run these.

/** One search hit: row `row`, cell `cell` of that row (side by side has two), [start, end). */
export interface Match {
  row: number;
  cell: number;
  start: number;
  end: number;
}

/** Stop counting here: a one-letter query in a 20,000-line module finds too many to step. */
export const MAX_MATCHES = 10_000;

/** Every case-insensitive occurrence of `query` in `rows` (each row a list of cells' texts). */
export function findMatches(rows: readonly (readonly string[])[], query: string): Match[] {
  const out: Match[] = [];
  const q = query.toLowerCase();
  if (!q) {
    return out;
  }
  for (let row = 0; row < rows.length; row++) {
    const cells = rows[row];
    for (let cell = 0; cell < cells.length; cell++) {
      const text = cells[cell].toLowerCase();
      for (let at = text.indexOf(q); at >= 0; at = text.indexOf(q, at + q.length)) {
        out.push({ row, cell, start: at, end: at + q.length });
        if (out.length >= MAX_MATCHES) {
          return out;
        }
      }
    }
  }
  return out;
}

/** Characters shown before the first elision (the result's name and op, usually). */
const HEAD = 18;
/** Characters of unchanged text kept before each change. */
const BEFORE = 20;
/** Gaps shorter than this are shown rather than elided (the marker would be as long). */
const MIN_GAP = 12;

/** Character ranges of a line to show in a column `width` characters wide so that every range
 * of `focus` (flat [start, end, ...], sorted) is in view: the line's start, then each range
 * with some text before it; the unchanged text between is elided. `indent`: leading spaces,
 * shown besides the start. The last window runs to the
 * line's end (the column cuts it). A line whose ranges all fit is shown whole. */
export function compactWindows(
  length: number,
  focus: readonly number[],
  width: number,
  indent = 0
): [number, number][] {
  if (focus.length < 2 || focus[focus.length - 1] + 4 <= width) {
    return [[0, length]];
  }
  // In a narrow column the head and the context before a change shrink, so the change fits.
  const head = Math.min(HEAD, Math.floor(width / 6));
  const before = Math.min(BEFORE, Math.floor(width / 6));
  const out: [number, number][] = [[0, Math.min(length, Math.min(indent, 8) + head)]];
  for (let k = 0; k + 1 < focus.length; k += 2) {
    const lo = Math.max(0, focus[k] - before);
    const hi = Math.min(length, focus[k + 1] + before);
    const prev = out[out.length - 1];
    if (lo - prev[1] < MIN_GAP) {
      prev[1] = Math.max(prev[1], hi);
    } else {
      out.push([lo, hi]);
    }
  }
  out[out.length - 1][1] = length;
  return out;
}

/** Flat ranges of both lists, sorted by start. */
export function mergeRanges(a: readonly number[], b: readonly number[]): number[] {
  const pairs: [number, number][] = [];
  for (const list of [a, b]) {
    for (let k = 0; k + 1 < list.length; k += 2) {
      pairs.push([list[k], list[k + 1]]);
    }
  }
  pairs.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  return pairs.flat();
}

const HLO_TABLES = new Set(['FileNames', 'FunctionNames', 'FileLocations', 'StackFrames']);

/** Where XLA's HLO text lists its source tables (file names, function names, locations, stack
 * frames: dozens of lines before the first computation): [first, last] 0-based line indices of
 * each run of tables, and the tables' names. */
export function hloTableRuns(lines: readonly string[]): { first: number; last: number; names: string[] }[] {
  const runs: { first: number; last: number; names: string[] }[] = [];
  let i = 0;
  while (i < lines.length) {
    if (!HLO_TABLES.has(lines[i].trim())) {
      i++;
      continue;
    }
    const run = { first: i, last: i, names: [] as string[] };
    for (; i < lines.length; i++) {
      const line = lines[i].trim();
      if (HLO_TABLES.has(line)) {
        run.names.push(line);
      } else if (line !== '' && !/^\d+\s/.test(line)) {
        break;
      }
      if (line !== '') {
        run.last = i;
      }
    }
    runs.push(run);
  }
  return runs;
}

/** A file name made of `parts` (function, stage, ...): letters, digits, `.`, `-` and `_` only. */
export function fileName(parts: readonly (string | number)[], extension: string): string {
  const stem = parts
    .map(p => String(p).replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^_+|_+$/g, ''))
    .filter(Boolean)
    .join('-');
  return `${(stem || 'reactant_lab').slice(0, 120)}.${extension}`;
}
