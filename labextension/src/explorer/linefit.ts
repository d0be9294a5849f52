// How a long line of a diff fits its column: the result names, the op name and every changed
// token (and search hit) always show; a line that wraps to a few rows is shown whole, wrapped;
// a longer one keeps those parts with as much unchanged text around them as the rows hold, and
// elides only the unchanged runs between them (`…N…`, a click shows the whole line). Pure: the
// node tests run it, the diff view lays its segments out.

/** Flat [start, end, ...] character ranges of a line's head: its result names (with the `=`)
 * and its op name. MLIR (`%0:4 = stablehlo.while(`, `"stablehlo.add"(`, `func.func`) and XLA's
 * HLO (`ROOT %add.3 = f32[4]{0} add(`). The same rule as reactant_lab.render.highlight.line_head
 * (labextension/test/fixtures/line_heads.json keeps the two in step). */
export function lineHead(line: string): number[] {
  const mlir = MLIR_HEAD.exec(line);
  if (mlir) {
    const end = mlir[0].length;
    const start = end - mlir[2].length - (mlir[1] ?? '').length;
    return [start, end];
  }
  const hlo = HLO_HEAD.exec(line);
  if (hlo) {
    const end = hlo[0].length;
    const start = line.length - line.trimStart().length;
    return [start, start + hlo[1].length, end - hlo[3].length, end];
  }
  return [];
}

const SSA = '%[A-Za-z0-9$._-]+(?::\\d+)?';
const OP = '[A-Za-z_][\\w$]*(?:\\.[\\w$]+)+';
const MLIR_HEAD = new RegExp(`^\\s*(${SSA}(?:\\s*,\\s*${SSA})*\\s*=\\s*)?("${OP}"|${OP})(?=[\\s(<{"]|$)(?!\\s*=)`);
const HLO_HEAD = /^\s*((?:ROOT\s+)?%?[\w.-]+\s*=)\s*(\([^()]*\)|[^\s(]+)\s+([a-z][\w-]*)(?=\()/;

/** Ranges merged where they overlap or touch, sorted. */
function mergeFlat(flat: readonly number[]): number[] {
  const pairs: [number, number][] = [];
  for (let k = 0; k + 1 < flat.length; k += 2) {
    if (flat[k + 1] > flat[k]) {
      pairs.push([flat[k], flat[k + 1]]);
    }
  }
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: [number, number][] = [];
  for (const p of pairs) {
    const last = out[out.length - 1];
    if (last && p[0] <= last[1]) {
      last[1] = Math.max(last[1], p[1]);
    } else {
      out.push([p[0], p[1]]);
    }
  }
  return out.flat();
}

/** What an elided run [lo, hi) of a line `length` long shows: `…N…`, or a bare `…` for the
 * line's end. */
export function gapLabel(lo: number, hi: number, length: number): string {
  return hi >= length ? '…' : `…${(hi - lo).toLocaleString('en-US')}…`;
}

/** A part of a line as its cell shows it: text [lo, hi), an elided run [lo, hi), a line break. */
export type Segment = { kind: 'text' | 'gap'; lo: number; hi: number } | { kind: 'break' };

export interface Fitted {
  segments: Segment[];
  /** Rows (visual lines) the cell takes. */
  rows: number;
  /** Characters the rows after the first are indented by. */
  indent: number;
}

export interface FitOptions {
  /** Flat ranges that must show besides the head: changed tokens, search hits. */
  keep?: readonly number[];
  /** Rows the line may wrap to before unchanged text is elided. */
  maxRows?: number;
  /** Show the whole line, wrapped. */
  whole?: boolean;
}

/** Gaps shorter than this are shown rather than elided (the marker would be as long). */
const MIN_GAP = 10;
/** Past this many characters of ranges to keep, the rest of a line's changes are elided (a
 * constant of megabytes: its first changes show what a pass did to it). */
export const KEEP_MAX = 2000;
/** Window edges move to a token boundary up to this many characters away. */
const SNAP = 12;

/** Lay `line` out in a column `width` characters wide (see the file's comment). */
export function fitLine(line: string, width: number, options: FitOptions = {}): Fitted {
  const { keep = [], maxRows = 3, whole = false } = options;
  const w = Math.max(8, Math.floor(width));
  const leading = line.length - line.trimStart().length;
  const indent = Math.min(leading + 4, Math.floor(w / 3));
  if (line.length <= w) {
    return { segments: [{ kind: 'text', lo: 0, hi: line.length }], rows: 1, indent };
  }
  const must = mustRanges(line, keep);
  // rows break between tokens: never inside a word of the head or a changed token that fits
  const unbroken = [...headWords(line), ...keep];
  const all: [number, number][] = [[0, line.length]];
  const wholeFit = wrap(line, all, w, indent, unbroken);
  if (whole || wholeFit.rows <= maxRows) {
    return wholeFit;
  }
  // The characters the rows hold, less what breaks at token boundaries waste.
  let budget = w + (maxRows - 1) * (w - indent) - 2 * maxRows;
  let fitted = wrap(line, grow(line, must, budget), w, indent, unbroken);
  for (let tries = 0; tries < 4 && fitted.rows > maxRows; tries++) {
    budget -= Math.ceil(w / 3);
    fitted = wrap(line, grow(line, must, budget), w, indent, unbroken);
  }
  return fitted;
}

/** Flat ranges of the words of a line's head (`%0:4`, `=`, `stablehlo.while`). */
function headWords(line: string): number[] {
  const head = lineHead(line);
  const out: number[] = [];
  for (let k = 0; k + 1 < head.length; k += 2) {
    for (const m of line.slice(head[k], head[k + 1]).matchAll(/\S+/g)) {
      out.push(head[k] + (m.index ?? 0), head[k] + (m.index ?? 0) + m[0].length);
    }
  }
  return out;
}

/** The ranges a line must show: [0, end of its head] (the indentation too), then `keep`,
 * merged, up to KEEP_MAX characters. */
function mustRanges(line: string, keep: readonly number[]): [number, number][] {
  const head = lineHead(line);
  const first = head.length ? head[1] : line.length - line.trimStart().length;
  const clip = (x: number) => Math.min(Math.max(x, 0), line.length);
  const merged = mergeFlat([0, first, ...head.slice(2), ...keep.map(clip)]);
  const out: [number, number][] = [];
  let total = 0;
  for (let k = 0; k + 1 < merged.length && total < KEEP_MAX; k += 2) {
    const hi = Math.min(merged[k + 1], merged[k] + KEEP_MAX - total);
    out.push([merged[k], hi]);
    total += hi - merged[k];
  }
  if (!out.length || out[0][0] > 0) {
    out.unshift([0, 0]);
  }
  return joinClose(line.length, out);
}

/** Windows whose gap is too short to elide, joined. */
function joinClose(length: number, windows: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [lo, hi] of windows) {
    const last = out[out.length - 1];
    if (last && lo - last[1] < MIN_GAP) {
      last[1] = Math.max(last[1], hi);
    } else {
      out.push([lo, hi]);
    }
  }
  const last = out[out.length - 1];
  if (length - last[1] < MIN_GAP) {
    last[1] = length;
  }
  return out;
}

/** Characters the windows show, with a marker for each elided run. */
function cost(length: number, windows: readonly [number, number][]): number {
  let n = 0;
  let pos = 0;
  for (const [lo, hi] of windows) {
    if (lo > pos) {
      n += gapLabel(pos, lo, length).length;
    }
    n += hi - lo;
    pos = hi;
  }
  return pos < length ? n + 1 : n;
}

/** The `must` windows grown with unchanged text around them while the whole costs at most
 * `budget` characters: each window gains text after it, and (every other round) before it. */
function grow(line: string, must: readonly [number, number][], budget: number): [number, number][] {
  let windows = must.map(([lo, hi]): [number, number] => [lo, hi]);
  const length = line.length;
  for (let round = 0; cost(length, windows) < budget; round++) {
    let moved = false;
    for (let k = 0; k < windows.length; k++) {
      const limit = k + 1 < windows.length ? windows[k + 1][0] : length;
      if (windows[k][1] < limit && cost(length, windows) < budget) {
        windows[k][1]++;
        moved = true;
      }
      const floor = k > 0 ? windows[k - 1][1] : 0;
      if (round % 2 === 1 && k > 0 && windows[k][0] > floor && cost(length, windows) < budget) {
        windows[k][0]--;
        moved = true;
      }
    }
    windows = joinClose(length, windows);
    if (!moved) {
      break;
    }
  }
  return snap(line, windows, must);
}

const BOUNDARY = /[\s,()<>{}[\]:=]/;

/** Window edges that cut a token moved to the nearest boundary inside the window, never into
 * a range that must show. */
function snap(line: string, windows: [number, number][], must: readonly [number, number][]): [number, number][] {
  const inMust = (pos: number) => must.some(([lo, hi]) => pos > lo && pos < hi);
  const mustEdge = (pos: number) => must.some(([lo, hi]) => pos === lo || pos === hi);
  for (const win of windows) {
    let [lo, hi] = win;
    if (hi < line.length && !mustEdge(hi) && !BOUNDARY.test(line[hi - 1] ?? ' ')) {
      for (let p = hi - 1; p > Math.max(lo, hi - SNAP); p--) {
        if (inMust(p)) {
          break;
        }
        if (BOUNDARY.test(line[p - 1])) {
          hi = p;
          break;
        }
      }
    }
    if (lo > 0 && !mustEdge(lo) && !BOUNDARY.test(line[lo - 1])) {
      for (let p = lo + 1; p < Math.min(hi, lo + SNAP); p++) {
        if (inMust(p)) {
          break;
        }
        if (BOUNDARY.test(line[p - 1])) {
          lo = p;
          break;
        }
      }
    }
    win[0] = lo;
    win[1] = hi;
  }
  return windows.filter(([lo, hi]) => hi > lo || lo === 0);
}

/** The windows as segments (text, elided runs between them) broken into rows of `width`
 * characters (`width - indent` after the first), at a space or comma where one is near, and
 * not inside a range of `unbroken` (flat: the head, changed tokens) that fits a row. */
export function wrap(
  line: string,
  windows: readonly [number, number][],
  width: number,
  indent: number,
  unbroken: readonly number[] = []
): Fitted {
  const inside = (p: number): number | null => {
    for (let k = 0; k + 1 < unbroken.length; k += 2) {
      if (p > unbroken[k] && p < unbroken[k + 1] && unbroken[k + 1] - unbroken[k] <= width - indent) {
        return unbroken[k];
      }
    }
    return null;
  };
  const segments: Segment[] = [];
  let rows = 1;
  let col = 0;
  let room = width;
  const newRow = () => {
    segments.push({ kind: 'break' });
    rows++;
    col = 0;
    room = width - indent;
  };
  const text = (lo: number, hi: number) => {
    while (hi - lo > room - col) {
      const cut = lo + Math.max(1, room - col);
      let at = breakAt(line, lo + (room - col) / 2, cut);
      const start = inside(at);
      if (start !== null && start > lo) {
        at = start; // the whole token on the next row
      } else if (start !== null && col > 0) {
        newRow();
        continue;
      }
      if (col > 0 && at === cut && room - col < 8) {
        newRow(); // too little room left on this row to be worth a hard break
        continue;
      }
      segments.push({ kind: 'text', lo, hi: at });
      lo = at;
      newRow();
    }
    if (hi > lo) {
      segments.push({ kind: 'text', lo, hi });
      col += hi - lo;
    }
  };
  const gap = (lo: number, hi: number) => {
    const n = gapLabel(lo, hi, line.length).length;
    if (col > 0 && col + n > room) {
      newRow();
    }
    segments.push({ kind: 'gap', lo, hi });
    col += n;
  };
  let pos = 0;
  for (const [lo, hi] of windows) {
    if (lo > pos) {
      gap(pos, lo);
    }
    text(lo, hi);
    pos = Math.max(pos, hi);
  }
  if (pos < line.length) {
    gap(pos, line.length);
  }
  return { segments, rows, indent };
}

/** Where to break a row that must end by `cut`: after a comma's space or an opening
 * parenthesis, else after a space, found after `floor`; `cut` itself when neither is. */
function breakAt(line: string, floor: number, cut: number): number {
  for (const good of [(p: number) => line[p - 1] === '(' || (line[p - 1] === ' ' && line[p - 2] === ','), (p: number) => /\s/.test(line[p - 1])]) {
    for (let p = cut; p > floor; p--) {
      if (good(p)) {
        return p;
      }
    }
  }
  return cut;
}
