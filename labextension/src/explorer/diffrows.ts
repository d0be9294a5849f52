// A payload diff's compact rows -> the rows a diff view draws (side by side or unified), with
// unchanged runs folded unless expanded. Pure: the view only lays these out.

import type { DiffRow } from './types';
import type { Layout } from './state';

export interface Cell {
  /** Which text the line is from. */
  side: 'before' | 'after';
  /** 1-based line number, null for the empty side of an added / removed line. */
  line: number | null;
  kind: '' | 'add' | 'del';
  /** Flat [start, end, ...] character ranges that differ inside the line. */
  spans: readonly number[];
}

export type ViewRow =
  | { type: 'pair'; left: Cell; right: Cell }
  | { type: 'uni'; before: number | null; after: number | null; mark: ' ' | '-' | '+'; cell: Cell }
  | { type: 'fold'; fold: number; hidden: number; label: string }
  | { type: 'gap'; label: string };

const EMPTY_BEFORE: Cell = { side: 'before', line: null, kind: '', spans: [] };
const EMPTY_AFTER: Cell = { side: 'after', line: null, kind: '', spans: [] };

function plain(side: Cell['side'], line: number): Cell {
  return { side, line, kind: '', spans: [] };
}

/** The same diff read the other way round (after -> before). */
export function reverseRows(rows: readonly DiffRow[]): DiffRow[] {
  return rows.map((r): DiffRow => {
    switch (r[0]) {
      case '=':
        return ['=', r[1], r[2].map(([i, j]): [number, number] => [j, i]), r[3].map(([i, j]): [number, number] => [j, i])];
      case '-':
        return ['+', r[1], r[2]];
      case '+':
        return ['-', r[1], r[2]];
      default:
        return ['~', r[2], r[1], r[4], r[3]];
    }
  });
}

/** Line ranges [before0, before1, after0, after1] (1-based, inclusive) a fold hides. */
export function foldRange(
  row: Extract<DiffRow, ['=', ...unknown[]]>,
  beforeCount: number,
  afterCount: number
): [number, number, number, number] {
  const [, hidden, head, tail] = row;
  const last = head[head.length - 1];
  const next = tail[0];
  let a0: number;
  let b0: number;
  if (last) {
    [a0, b0] = [last[0] + 1, last[1] + 1];
  } else if (next) {
    [a0, b0] = [Math.max(1, next[0] - hidden), Math.max(1, next[1] - hidden)];
  } else {
    [a0, b0] = [1, 1];
  }
  const a1 = next ? next[0] - 1 : beforeCount;
  const b1 = next ? next[1] - 1 : afterCount;
  return [a0, a1, b0, b1];
}

function equalRow(i: number, j: number, layout: Layout): ViewRow {
  if (layout === 'side-by-side') {
    return { type: 'pair', left: plain('before', i), right: plain('after', j) };
  }
  return { type: 'uni', before: i, after: j, mark: ' ', cell: plain('after', j) };
}

function changeRows(r: DiffRow, layout: Layout): ViewRow[] {
  const del = (line: number, spans: readonly number[]): Cell => ({
    side: 'before',
    line,
    kind: 'del',
    spans
  });
  const add = (line: number, spans: readonly number[]): Cell => ({
    side: 'after',
    line,
    kind: 'add',
    spans
  });
  const before = r[0] === '-' ? del(r[1], r[2]) : r[0] === '~' ? del(r[1], r[3]) : null;
  const after = r[0] === '+' ? add(r[1], r[2]) : r[0] === '~' ? add(r[2], r[4]) : null;
  if (layout === 'side-by-side') {
    return [{ type: 'pair', left: before ?? EMPTY_BEFORE, right: after ?? EMPTY_AFTER }];
  }
  const out: ViewRow[] = [];
  if (before) {
    out.push({ type: 'uni', before: before.line, after: null, mark: '-', cell: before });
  }
  if (after) {
    out.push({ type: 'uni', before: null, after: after.line, mark: '+', cell: after });
  }
  return out;
}

/** Rows to draw. `expanded` holds the folds (numbered in order) shown in full; `lineCounts`
 * are the two texts' line counts (a fold at the end runs to the last line). */
export function viewRows(
  rows: readonly DiffRow[],
  layout: Layout,
  expanded: ReadonlySet<number> = new Set(),
  lineCounts: [number, number] = [0, 0]
): ViewRow[] {
  const out: ViewRow[] = [];
  let fold = 0;
  for (const r of rows) {
    if (r[0] !== '=') {
      out.push(...changeRows(r, layout));
      continue;
    }
    for (const [i, j] of r[2]) {
      out.push(equalRow(i, j, layout));
    }
    if (r[1] > 0) {
      const id = fold++;
      const [a0, a1, b0, b1] = foldRange(r, lineCounts[0], lineCounts[1]);
      if (expanded.has(id)) {
        const n = Math.max(a1 - a0, b1 - b0) + 1;
        for (let k = 0; k < n; k++) {
          const i = a0 + k <= a1 ? a0 + k : null;
          const j = b0 + k <= b1 ? b0 + k : null;
          out.push(
            layout === 'side-by-side'
              ? {
                  type: 'pair',
                  left: i === null ? EMPTY_BEFORE : plain('before', i),
                  right: j === null ? EMPTY_AFTER : plain('after', j)
                }
              : {
                  type: 'uni',
                  before: i,
                  after: j,
                  mark: ' ',
                  cell: j === null ? plain('before', i as number) : plain('after', j)
                }
          );
        }
      } else {
        const s = r[1] === 1 ? '' : 's';
        out.push({
          type: 'fold',
          fold: id,
          hidden: r[1],
          label: `${r[1].toLocaleString('en-US')} unchanged line${s} (lines ${a0}-${a1} before, ${b0}-${b1} after): click to show`
        });
      }
    }
    for (const [i, j] of r[3]) {
      out.push(equalRow(i, j, layout));
    }
  }
  return out;
}

function isChange(r: ViewRow): boolean {
  return r.type === 'pair' ? r.left.kind !== '' || r.right.kind !== '' : r.type === 'uni' && r.mark !== ' ';
}

/** Only the changed rows, a `gap` row where unchanged lines were left out. */
export function changedOnly(rows: readonly ViewRow[]): ViewRow[] {
  const out: ViewRow[] = [];
  let skipped = 0;
  for (const r of rows) {
    if (isChange(r)) {
      if (skipped && out.length) {
        out.push({ type: 'gap', label: '⋯' });
      }
      skipped = 0;
      out.push(r);
    } else {
      skipped++;
    }
  }
  return out;
}

/** Indices of the rows where a run of changed rows starts (what next / previous change visit). */
export function changeStarts(rows: readonly ViewRow[]): number[] {
  const out: number[] = [];
  rows.forEach((r, i) => {
    if (isChange(r) && (i === 0 || !isChange(rows[i - 1]))) {
      out.push(i);
    }
  });
  return out;
}

/** The diff as unified text (for copy and download): `-`, `+` and ` ` lines, and an `@@` line
 * for each run of unchanged lines left out. */
export function diffText(
  rows: readonly DiffRow[],
  before: readonly string[],
  after: readonly string[],
  headers: [string, string]
): string {
  const out = [`--- ${headers[0]}`, `+++ ${headers[1]}`];
  for (const r of viewRows(rows, 'unified', new Set(), [before.length, after.length])) {
    if (r.type === 'fold') {
      out.push(`@@ ${r.hidden} unchanged line${r.hidden === 1 ? '' : 's'} @@`);
    } else if (r.type === 'uni') {
      const line = r.cell.line === null ? '' : ((r.cell.side === 'before' ? before : after)[r.cell.line - 1] ?? '');
      out.push(`${r.mark}${line}`);
    }
  }
  return out.join('\n');
}
