// Pure operations on the lines a text view shows: finding a query, folding the source tables of XLA's HLO, and the
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
