// The diff pane: what the selected stage is compared with, side by side or unified, and the
// diff itself drawn from the payload's compact rows in a virtualized list. A long changed line
// keeps its result names, op name and every changed token in view: it wraps to a few rows, and
// past that the unchanged runs between those parts are elided (a click shows the whole line,
// wrapped; linefit.ts);
// "changed lines only", next / previous change (n / p, Alt+Down / Alt+Up), find, copy and
// download work on the diff shown.

import { changeStarts, changedOnly, diffText, viewRows, reverseRows, type Cell, type ViewRow } from './diffrows';
import { button, codeLine, el, LONG_LINE, markMatches } from './dom';
import { FileTools } from './files';
import { fitLine, type Fitted } from './linefit';
import { Finder } from './find';
import type { ExplorerViewState, Layout } from './state';
import { markLineNumber, markPicked, type LineSources } from './provenance';
import { fileName } from './textops';
import type { TextStore } from './texts';
import type { DiffEntry, DiffRow, ExplorerPayload } from './types';
import { ROW_HEIGHT, VirtualList } from './virtual';

export interface DiffViewEvents {
  onBase(base: number | null): void;
  onLayout(layout: Layout): void;
}

export interface ShownDiff {
  before: number;
  after: number;
  entry: DiffEntry;
  reversed: boolean;
}

/** Rows a changed line may wrap to before its unchanged runs are elided (in a column of at
 * least WRAP_MIN characters; a narrower one elides to one row). */
export const WRAP_ROWS = 3;
const WRAP_MIN = 40;
/** A line opened whole wraps up to this many rows; a longer one scrolls sideways instead. */
const WHOLE_ROWS = 200;
/** The diff rows' fixed parts (style.ts): line numbers 4.5em, the unified mark 1.2em, the
 * code's right padding (.3em side by side, 1em unified), at 12px. */
const LN_PX = 54;
const KEYS = 'n / Alt+↓ next change, p / Alt+↑ previous change (with the diff focused)';

interface Drawn {
  /** The stages whose texts the rows' line numbers index (before side, after side). */
  stages: [number, number];
  rows: DiffRow[];
  a: string[];
  b: string[];
  layout: Layout;
  names: [string, string];
}

export class DiffView {
  readonly node: HTMLDivElement;
  private readonly base: HTMLSelectElement;
  private readonly layouts: HTMLSelectElement;
  private readonly onlyChanged: HTMLInputElement;
  private readonly changeLabel: HTMLSpanElement;
  private readonly summary: HTMLDivElement;
  private readonly list: VirtualList;
  private readonly finder: Finder;
  private readonly files: FileTools;
  private readonly tools: HTMLDivElement;
  private token = 0;
  private expanded = new Set<number>();
  private whole = new Set<string>();
  private drawn: Drawn | null = null;
  private shown: ViewRow[] = [];
  private starts: number[] = [];
  private change = -1;
  private fileBase = 'diff';
  private sourcesOf: ((stage: number) => LineSources | null) | null = null;
  /** How each long changed line fits its column, by side, line, width and hits. */
  private fits = new Map<string, Fitted | null>();
  private width = 0;
  private readonly resize: ResizeObserver | null;
  private sources: [LineSources | null, LineSources | null] = [null, null];

  constructor(events: DiffViewEvents) {
    this.node = el('div', 'rl-diff');
    const bar = el('div', 'rl-toolbar');
    this.base = el('select', 'rl-base');
    this.base.setAttribute('aria-label', 'compare with');
    this.base.addEventListener('change', () =>
      events.onBase(this.base.value === 'previous' ? null : Number(this.base.value))
    );
    this.layouts = el('select', 'rl-layout');
    this.layouts.setAttribute('aria-label', 'diff layout');
    for (const layout of ['side-by-side', 'unified']) {
      this.layouts.appendChild(new Option(layout, layout));
    }
    this.layouts.addEventListener('change', () => events.onLayout(this.layouts.value as Layout));
    const compare = el('label', '', 'compare with ');
    compare.appendChild(this.base);
    bar.append(compare, this.layouts);
    this.tools = el('div', 'rl-toolbar rl-diff-tools');
    const only = el('label', 'rl-only-changed', ' changed lines only');
    this.onlyChanged = el('input');
    this.onlyChanged.type = 'checkbox';
    this.onlyChanged.addEventListener('change', () => this.draw(true));
    only.prepend(this.onlyChanged);
    const prev = button('↑ previous change', () => this.step(-1), 'rl-prev-change');
    prev.title = `previous change (p or Alt+↑)`;
    const next = button('↓ next change', () => this.step(1), 'rl-next-change');
    next.title = `next change (n or Alt+↓)`;
    this.changeLabel = el('span', 'rl-change-count rl-note');
    this.finder = new Finder({
      rowsText: () => this.shown.map(r => this.cellsText(r)),
      reveal: row => this.reveal(row),
      redraw: () => this.draw(false)
    });
    this.files = new FileTools(
      {
        text: () => this.unifiedText(),
        name: () => fileName([this.fileBase], 'diff'),
        what: () => 'the diff (unified)'
      },
      'diff'
    );
    this.tools.append(only, prev, next, this.changeLabel, this.finder.node, this.files.node);
    this.tools.title = KEYS;
    this.summary = el('div', 'rl-diff-summary');
    this.list = new VirtualList('rl-diff-rows', () => el('div'));
    this.list.node.setAttribute('aria-label', `diff: ${KEYS}`);
    this.node.addEventListener('keydown', ev => this.onKey(ev));
    this.node.append(bar, this.tools, this.files.note, this.summary, this.list.node);
    // Lines are fitted to the columns' width: again when it changes (laid out after the first
    // draw, the window resized, the stage list narrowed or widened).
    this.resize =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if (this.drawn && this.list.node.clientWidth && this.columnChars(this.drawn.layout) !== this.width) {
              this.render(false);
            }
          });
    this.resize?.observe(this.list.node);
  }

  /** Fill the toolbar for the selected stage. */
  setToolbar(payload: ExplorerPayload, state: ExplorerViewState): void {
    const options = [new Option('the stage before', 'previous')];
    for (const s of payload.stages) {
      if (s.index !== state.stage) {
        options.push(new Option(`stage ${s.index}: ${s.name}`, String(s.index)));
      }
    }
    this.base.replaceChildren(...options);
    this.base.value = state.base === null ? 'previous' : String(state.base);
    this.layouts.value = state.layout;
  }

  /** Where each stage's ops came from in Python (hover, marks, the picked line's ops); set
   * before `showDiff`, or call `redraw` after. */
  setSources(sourcesOf: ((stage: number) => LineSources | null) | null): void {
    this.sourcesOf = sourcesOf;
  }

  /** Draw again, keeping the scroll position (the picked line changed). */
  redraw(): void {
    const d = this.drawn;
    if (d) {
      this.sources = [this.sourcesOf?.(d.stages[0]) ?? null, this.sourcesOf?.(d.stages[1]) ?? null];
      this.render(false);
    }
  }

  /** A note instead of a diff (same structure, nothing to compare, waiting, missing). */
  showNote(text: string, className = 'rl-note'): void {
    this.token++;
    this.drawn = null;
    this.shown = [];
    this.tools.hidden = true;
    this.summary.className = `rl-diff-summary ${className}`;
    this.summary.textContent = text;
    this.list.setRows(0, () => el('div'));
  }

  /** Draw a diff of stage `shown.before` -> `shown.after`; resolves once drawn. */
  async showDiff(
    store: TextStore,
    payload: ExplorerPayload,
    shown: ShownDiff,
    layout: Layout
  ): Promise<void> {
    const token = ++this.token;
    const { entry, reversed } = shown;
    // The rows index the texts of the stages the diff was computed between.
    const stages: [number, number] = reversed ? [entry.after, entry.before] : [entry.before, entry.after];
    const [textA, textB] = [payload.stages[stages[0]].text, payload.stages[stages[1]].text];
    const [a, b] = await Promise.all([store.lines(textA), store.lines(textB)]);
    if (token !== this.token) {
      return;
    }
    const counts = reversed
      ? { added: entry.removed, removed: entry.added }
      : { added: entry.added, removed: entry.removed };
    const s = (n: number) => n.toLocaleString('en-US');
    this.summary.className = 'rl-diff-summary';
    this.summary.textContent =
      `stage ${shown.before} → stage ${shown.after}: +${s(counts.added)} added, ` +
      `−${s(counts.removed)} removed, ~${s(entry.changed)} changed lines` +
      (entry.kind === 'pair' && (entry.before !== shown.before || entry.after !== shown.after)
        ? ` (computed between stages ${entry.before} and ${entry.after}, same structures)`
        : '');
    const name = (i: number) => `stage ${i}: ${payload.stages[i].name}`;
    this.fileBase = `${payload.meta.function}-stage${shown.before}-to-stage${shown.after}`;
    this.sources = [this.sourcesOf?.(stages[0]) ?? null, this.sourcesOf?.(stages[1]) ?? null];
    this.drawn = {
      stages,
      rows: reversed ? reverseRows(entry.rows) : entry.rows,
      a,
      b,
      layout,
      names: [name(shown.before), name(shown.after)]
    };
    this.expanded = new Set();
    this.whole = new Set();
    this.fits.clear();
    this.tools.hidden = false;
    this.draw(true);
  }

  /** Scroll to the row showing line `line` (1-based) of the stage after (the graph's link);
   * false when no row shows it (folded, or not drawn yet). */
  revealLine(line: number): boolean {
    const row = this.shown.findIndex(r =>
      (r.type === 'pair' ? [r.left, r.right] : r.type === 'uni' ? [r.cell] : []).some(c => c.side === 'after' && c.line === line)
    );
    if (row >= 0) {
      this.list.scrollTo(row);
      this.render(false);
    }
    return row >= 0;
  }

  dispose(): void {
    this.token++;
    this.resize?.disconnect();
    this.list.dispose();
    this.node.remove();
  }

  /** Lay the rows out again (after a fold opened, the filter or the hits changed). */
  private draw(top: boolean, search = top): void {
    const d = this.drawn;
    if (!d) {
      return;
    }
    const all = viewRows(d.rows, d.layout, this.expanded, [d.a.length, d.b.length]);
    this.shown = this.onlyChanged.checked ? changedOnly(all) : all;
    this.starts = changeStarts(this.shown);
    if (top) {
      this.change = -1;
    }
    this.node.classList.toggle('rl-uni', d.layout === 'unified');
    if (search) {
      this.finder.search(false);
    }
    this.showChange();
    this.render(top);
  }

  private render(top: boolean): void {
    const d = this.drawn;
    if (!d) {
      return;
    }
    const current = this.change >= 0 ? this.starts[this.change] : -1;
    const width = this.columnChars(d.layout);
    if (width !== this.width) {
      this.fits.clear();
      this.width = width;
    }
    this.list.setRows(this.shown.length, i => this.row(i, i === current), top, i => this.rowLines(i));
  }

  private cellText(cell: Cell): string {
    const d = this.drawn;
    if (!d || cell.line === null) {
      return '';
    }
    return (cell.side === 'before' ? d.a : d.b)[cell.line - 1] ?? '';
  }

  private cellsText(r: ViewRow): string[] {
    return r.type === 'pair' ? [this.cellText(r.left), this.cellText(r.right)] : r.type === 'uni' ? [this.cellText(r.cell)] : [];
  }

  private unifiedText(): string {
    const d = this.drawn;
    return d ? diffText(d.rows, d.a, d.b, d.names) : '';
  }

  /** Characters a code column holds now (side by side: half the list's width less the line
   * numbers), measured in the diff's own font. */
  private columnChars(layout: Layout): number {
    const width = this.list.node.clientWidth || 1000;
    const code = layout === 'side-by-side' ? (width - 2 * LN_PX) / 2 - 4 : width - 2 * LN_PX - 15 - 12;
    return Math.max(16, Math.floor(code / this.charWidth()));
  }

  /** Width of one character of the diff's monospace font (px). */
  private charWidth(): number {
    const px = this.list.charWidth('cd');
    return px > 2 ? px : 7.2;
  }

  /** How cell `k` of row `index` fits its column; null: as it is (one row, cut by the column). */
  private fit(index: number, c: Cell, k: number): Fitted | null {
    const line = this.cellText(c);
    const focus = this.finder.focus(index, k);
    const whole = this.whole.has(`${c.side}:${c.line}`);
    if (line.length <= this.width || (c.kind === '' && !focus.length && !whole)) {
      return null;
    }
    const key = `${c.side}:${c.line}:${whole}:${focus.join(',')}`;
    let fitted = this.fits.get(key);
    if (fitted === undefined) {
      const maxRows = this.width >= WRAP_MIN ? WRAP_ROWS : 1;
      fitted = fitLine(line, this.width, { keep: [...c.spans, ...focus], maxRows, whole });
      if (whole && (fitted.rows > WHOLE_ROWS || line.length > LONG_LINE * 4)) {
        fitted = null; // a constant of megabytes: the whole line scrolls sideways
      }
      this.fits.set(key, fitted);
    }
    return fitted;
  }

  /** Lines (18px) row `index` takes. */
  private rowLines(index: number): number {
    const r = this.shown[index];
    const cells = r.type === 'pair' ? [r.left, r.right] : r.type === 'uni' ? [r.cell] : [];
    return Math.max(1, ...cells.map((c, k) => this.fit(index, c, k)?.rows ?? 1));
  }

  private step(delta: 1 | -1): void {
    if (!this.starts.length) {
      return;
    }
    const n = this.starts.length;
    this.change = this.change < 0 ? (delta > 0 ? 0 : n - 1) : Math.min(n - 1, Math.max(0, this.change + delta));
    this.showChange();
    this.list.scrollTo(this.starts[this.change]);
    this.render(false);
  }

  private showChange(): void {
    const n = this.starts.length;
    this.changeLabel.textContent = n === 0 ? 'no change shown' : `${this.change >= 0 ? `change ${this.change + 1} of ${n}` : `${n} change${n === 1 ? '' : 's'}`}`;
  }

  private reveal(row: number): void {
    this.list.scrollTo(row);
    this.render(false);
    this.list.node.querySelector('.rl-hit-current')?.scrollIntoView({ block: 'nearest', inline: 'center' });
  }

  private onKey(ev: KeyboardEvent): void {
    const target = ev.target as HTMLElement | null;
    if (target && ['INPUT', 'SELECT', 'TEXTAREA'].includes(target.tagName)) {
      return;
    }
    const plain = !ev.altKey && !ev.ctrlKey && !ev.metaKey;
    if ((plain && ev.key === 'n') || (ev.altKey && ev.key === 'ArrowDown')) {
      this.step(1);
    } else if ((plain && ev.key === 'p') || (ev.altKey && ev.key === 'ArrowUp')) {
      this.step(-1);
    } else {
      return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  }

  private row(index: number, current: boolean): HTMLElement {
    const r = this.shown[index];
    const num = (n: number | null, side?: Cell['side']) => {
      const ln = el('span', 'ln', n === null ? '' : String(n));
      const src = side === undefined ? null : this.sources[side === 'before' ? 0 : 1];
      if (src && n !== null) {
        markLineNumber(ln, src, src.at(n));
      }
      return ln;
    };
    if (r.type === 'fold') {
      const fold = el('div', 'fold', r.label);
      fold.setAttribute('role', 'button');
      fold.addEventListener('click', () => {
        this.expanded.add(r.fold);
        this.draw(false, true);
      });
      return fold;
    }
    if (r.type === 'gap') {
      return el('div', 'fold rl-gap', r.label);
    }
    const cell = (c: Cell, k: number) => {
      const line = this.cellText(c);
      const key = `${c.side}:${c.line}`;
      const fitted = this.fit(index, c, k);
      const whole = this.whole.has(key) && !fitted;
      const node = codeLine(line, c.spans, {
        className: `cd ${c.kind}${whole ? ' rl-whole' : ''}`.trim(),
        focus: this.finder.focus(index, k),
        fitted: fitted ?? undefined
      });
      const hits = this.finder.hits(index, k);
      markMatches(node, hits.ranges, hits.current);
      if (line.length > this.width && !(fitted && this.whole.has(key))) {
        node.title = line.length > 4000 ? `${line.slice(0, 4000)}…` : line;
      }
      const src = this.sources[c.side === 'before' ? 0 : 1];
      const from = src && c.line !== null ? src.at(c.line) : 0;
      if (src && from) {
        node.title = node.title ? `${src.describe(from)}\n${node.title}` : src.describe(from);
        if (src.picked(from)) {
          markPicked(node, true);
        }
      }
      node.addEventListener('click', ev => {
        if ((ev.target as HTMLElement).classList.contains('el') && c.line !== null) {
          this.whole.add(key);
          if (r.type === 'pair') {  // both sides open, and scroll sideways together
            for (const side of [r.left, r.right]) {
              if (side.line !== null) {
                this.whole.add(`${side.side}:${side.line}`);
              }
            }
          }
          this.render(false);
        }
      });
      return node;
    };
    const row = el('div', current ? 'r rl-current' : 'r');
    const lines = this.rowLines(index);
    if (lines > 1) {
      row.style.height = `${lines * ROW_HEIGHT}px`;
    }
    if (r.type === 'pair') {
      const [left, right] = [cell(r.left, 0), cell(r.right, 1)];
      syncSideways(left, right);
      row.append(num(r.left.line, 'before'), left, num(r.right.line, 'after'), right);
    } else {
      row.append(num(r.before, r.after === null ? 'before' : undefined), num(r.after, 'after'), el('span', 'mk', r.mark), cell(r.cell, 0));
    }
    if (row.querySelector('.rl-hit-current')) {
      row.classList.add('rl-hit-row');
    }
    return row;
  }
}

/** An opened long line scrolls sideways together with its counterpart on the other side, so
 * the change stays in view on both. */
export function syncSideways(a: HTMLElement, b: HTMLElement): void {
  let busy = false;
  const follow = (from: HTMLElement, to: HTMLElement) => () => {
    if (busy) {
      return;
    }
    busy = true;
    to.scrollLeft = from.scrollLeft;
    busy = false;
  };
  a.addEventListener('scroll', follow(a, b));
  b.addEventListener('scroll', follow(b, a));
}
