// Find in a text view (a stage's IR, a diff, XLA's HLO): a search box, next / previous, the
// match count, and the hits marked in the rows drawn. JupyterLab's own find does not reach
// into outputs, and a virtualized list holds only the rows in view, so the view searches its
// own lines and scrolls to each hit.

import { button, el } from './dom';
import { findMatches, MAX_MATCHES, type Match } from './textops';

export interface FindHost {
  /** The texts of the rows the view shows, one list of cells per row. */
  rowsText(): readonly (readonly string[])[];
  /** Scroll row `row` into view and redraw (the current hit changed). */
  reveal(row: number): void;
  /** Redraw the rows in view (the hits changed). */
  redraw(): void;
}

export class Finder {
  readonly node: HTMLSpanElement;
  private readonly input: HTMLInputElement;
  private readonly count: HTMLSpanElement;
  private matches: Match[] = [];
  private byRow = new Map<number, number[]>();
  private current = -1;

  constructor(private readonly host: FindHost) {
    this.node = el('span', 'rl-find');
    this.input = el('input', 'rl-find-input');
    this.input.type = 'search';
    this.input.placeholder = 'find';
    this.input.setAttribute('aria-label', 'find in this text');
    this.input.title = 'find in the lines shown (folded lines are not searched): Enter next, Shift+Enter previous, Escape clears';
    // Enter / Escape here are the search's, not JupyterLab's notebook shortcuts.
    this.input.dataset.lmSuppressShortcuts = 'true';
    this.input.addEventListener('input', () => this.search(true));
    this.input.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        this.step(ev.shiftKey ? -1 : 1);
      } else if (ev.key === 'Escape') {
        this.input.value = '';
        this.search(false);
      } else {
        return;
      }
      ev.preventDefault();
      ev.stopPropagation();
    });
    const prev = button('▲', () => this.step(-1), 'rl-find-prev');
    prev.title = 'previous match (Shift+Enter)';
    const next = button('▼', () => this.step(1), 'rl-find-next');
    next.title = 'next match (Enter)';
    this.count = el('span', 'rl-find-count rl-note');
    this.node.append(this.input, prev, next, this.count);
  }

  get query(): string {
    return this.input.value;
  }

  /** Search the host's rows again (its text changed); the first hit becomes current when
   * `jump`. */
  search(jump = false): void {
    this.matches = findMatches(this.host.rowsText(), this.input.value);
    this.byRow = new Map();
    this.matches.forEach((m, k) => {
      const list = this.byRow.get(m.row);
      if (list) {
        list.push(k);
      } else {
        this.byRow.set(m.row, [k]);
      }
    });
    this.current = this.matches.length && jump ? 0 : -1;
    this.showCount();
    if (this.current >= 0) {
      this.host.reveal(this.matches[0].row);
    } else {
      this.host.redraw();
    }
  }

  /** The hits in one cell of a row: ranges, and which of them is the current hit (-1: none). */
  hits(row: number, cell: number): { ranges: [number, number][]; current: number } {
    const ranges: [number, number][] = [];
    let current = -1;
    for (const k of this.byRow.get(row) ?? []) {
      const m = this.matches[k];
      if (m.cell === cell) {
        if (k === this.current) {
          current = ranges.length;
        }
        ranges.push([m.start, m.end]);
      }
    }
    return { ranges, current };
  }

  /** Flat [start, end, ...] of the hits in one cell (to keep them in view on long lines). */
  focus(row: number, cell: number): number[] {
    return this.hits(row, cell).ranges.flat();
  }

  private step(delta: 1 | -1): void {
    if (!this.matches.length) {
      this.search(true);
      return;
    }
    const n = this.matches.length;
    this.current = this.current < 0 ? (delta > 0 ? 0 : n - 1) : (this.current + delta + n) % n;
    this.showCount();
    this.host.reveal(this.matches[this.current].row);
  }

  private showCount(): void {
    const n = this.matches.length;
    const more = n >= MAX_MATCHES ? '+' : '';
    this.count.textContent = !this.input.value
      ? ''
      : n === 0
        ? 'no match'
        : `${this.current >= 0 ? this.current + 1 : '-'} of ${n.toLocaleString('en-US')}${more}`;
  }
}
