// The diff pane: what the selected stage is compared with, side by side or unified, and the
// diff itself drawn from the payload's compact rows in a virtualized list.

import { viewRows, reverseRows, type Cell, type ViewRow } from './diffrows';
import { codeLine, el } from './dom';
import type { ExplorerViewState, Layout } from './state';
import type { TextStore } from './texts';
import type { DiffEntry, ExplorerPayload } from './types';
import { VirtualList } from './virtual';

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

export class DiffView {
  readonly node: HTMLDivElement;
  private readonly base: HTMLSelectElement;
  private readonly layouts: HTMLSelectElement;
  private readonly summary: HTMLDivElement;
  private readonly list: VirtualList;
  private token = 0;
  private expanded = new Set<number>();

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
    this.summary = el('div', 'rl-diff-summary');
    this.list = new VirtualList('rl-diff-rows', () => el('div'));
    this.node.append(bar, this.summary, this.list.node);
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

  /** A note instead of a diff (same structure, nothing to compare, waiting, missing). */
  showNote(text: string, className = 'rl-note'): void {
    this.token++;
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
    const [textA, textB] = reversed
      ? [payload.stages[entry.after].text, payload.stages[entry.before].text]
      : [payload.stages[entry.before].text, payload.stages[entry.after].text];
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
    const rows = reversed ? reverseRows(entry.rows) : entry.rows;
    this.expanded = new Set();
    const draw = (top: boolean) => {
      const shownRows = viewRows(rows, layout, this.expanded, [a.length, b.length]);
      this.node.classList.toggle('rl-uni', layout === 'unified');
      this.list.setRows(shownRows.length, i => this.row(shownRows[i], a, b, draw), top);
    };
    draw(true);
  }

  dispose(): void {
    this.token++;
    this.list.dispose();
    this.node.remove();
  }

  private row(r: ViewRow, a: string[], b: string[], draw: (top: boolean) => void): HTMLElement {
    const text = (cell: Cell) =>
      cell.line === null ? '' : ((cell.side === 'before' ? a : b)[cell.line - 1] ?? '');
    const num = (n: number | null) => el('span', 'ln', n === null ? '' : String(n));
    if (r.type === 'fold') {
      const fold = el('div', 'fold', r.label);
      fold.setAttribute('role', 'button');
      fold.addEventListener('click', () => {
        this.expanded.add(r.fold);
        draw(false);
      });
      return fold;
    }
    const row = el('div', 'r');
    if (r.type === 'pair') {
      // Side by side, long lines are cut at the column edge: hovering shows them whole.
      const cell = (c: Cell) => {
        const line = text(c);
        const node = codeLine(line, c.spans, true, `cd ${c.kind}`.trim());
        if (line.length > 60) {
          node.title = line.length > 4000 ? `${line.slice(0, 4000)}…` : line;
        }
        return node;
      };
      row.append(num(r.left.line), cell(r.left), num(r.right.line), cell(r.right));
    } else {
      row.append(
        num(r.before),
        num(r.after),
        el('span', 'mk', r.mark),
        codeLine(text(r.cell), r.cell.spans, true, `cd ${r.cell.kind}`.trim())
      );
    }
    return row;
  }
}
