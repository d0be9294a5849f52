// A text (a stage's IR, XLA's HLO, a kernel's LLVM IR or assembly), decoded when first shown, drawn line by line in a
// virtualized list with line numbers and MLIR colours; find, copy and download in its toolbar.
// XLA's HLO opens with its source tables folded.

import { codeLine, el, markMatches } from './dom';
import { FileTools } from './files';
import { Finder } from './find';
import { markPicked, sourceMark, type LineSources } from './provenance';
import { mainLines, nameValues } from './names';
import { hloTableRuns } from './textops';
import type { TextStore } from './texts';
import { VirtualList } from './virtual';

/** What a view shows: a module (MLIR, XLA's HLO), or a kernel's LLVM IR or assembly. */
export type TextKind = 'mlir' | 'hlo' | 'llvm' | 'asm';
/** The extension a text of each kind downloads with. */
const EXTENSION: Record<TextKind, string> = { mlir: 'mlir', hlo: 'hlo', llvm: 'll', asm: 's' };

/** A row: a line (0-based), or a fold of lines [first, last] that a click opens. */
type TextRow = number | { first: number; last: number; label: string };

export class TextView {
  readonly node: HTMLDivElement;
  private readonly head: HTMLSpanElement;
  private readonly list: VirtualList;
  private readonly finder: Finder;
  private readonly files: FileTools;
  private token = 0;
  private lines: string[] = [];
  private rows: TextRow[] = [];
  private fileName = '';
  private heading = '';
  private opened = new Set<number>();
  private sources: LineSources | null = null;
  private names: Map<string, string> | null = null;
  private mainRange: [number, number] | null = null;

  constructor(private readonly kind: TextKind) {
    this.node = el('div', `rl-text rl-text-${kind}`);
    const bar = el('div', 'rl-toolbar rl-text-bar');
    this.head = el('span', 'rl-text-head');
    this.list = new VirtualList('rl-code', () => el('div'));
    this.finder = new Finder({
      rowsText: () => this.rows.map(r => [typeof r === 'number' ? this.lines[r] : '']),
      reveal: row => {
        this.list.scrollTo(row);
        this.draw(false);
        this.list.node.querySelector('.rl-hit-current')?.scrollIntoView({ block: 'nearest', inline: 'center' });
      },
      redraw: () => this.draw(false)
    });
    this.files = new FileTools(
      {
        text: () => this.lines.join('\n'),
        name: () => this.fileName,
        what: () => this.heading
      },
      EXTENSION[kind]
    );
    bar.append(this.head, this.finder.node, this.files.node);
    this.node.append(bar, this.files.note, this.list.node);
  }

  /** Show text `id` of `store` under a heading, downloaded as `fileName`; returns when it is
   * drawn. */
  async show(store: TextStore, id: number, heading: string, fileName: string): Promise<void> {
    const token = ++this.token;
    this.fileName = fileName;
    this.heading = heading;
    const count = store.lineCount(id);
    this.head.textContent = `${heading} · ${count.toLocaleString('en-US')} lines`;
    this.node.classList.add('rl-loading');
    let lines: string[];
    try {
      lines = await store.lines(id);
    } catch (err) {
      if (token === this.token) {
        this.node.classList.remove('rl-loading');
        this.lines = [];
        this.rows = [];
        this.list.setRows(0, () => el('div'));
        this.head.textContent = `${heading}: could not decode the text (${String(err)})`;
      }
      return;
    }
    if (token !== this.token) {
      return;
    }
    this.node.classList.remove('rl-loading');
    if (lines !== this.lines) {
      this.opened = new Set();
    }
    this.lines = lines;
    this.mainRange = mainLines(lines);
    this.layout();
    this.finder.search(false);
    this.draw(true);
  }

  /** Where the lines' ops came from in Python (hover, gutter marks, the picked line's ops); set
   * before `show`, or call `redraw` after. */
  setSources(sources: LineSources | null): void {
    this.sources = sources;
  }

  /** Hover text of the SSA values of `@main` the user named (`%arg0` -> `A · float64[16] ·
   * args[0]`, a loop's block arguments and results, `names.valueTitles`); set before `show`. */
  setNames(names: Map<string, string> | null): void {
    this.names = names && names.size ? names : null;
  }

  /** Draw again (sources or the picked line changed); with `reveal`, scroll to the first op of
   * the picked line. */
  redraw(reveal: boolean): void {
    const src = this.sources;
    if (reveal && src) {
      const row = this.rows.findIndex(r => typeof r === 'number' && src.picked(src.at(r + 1)));
      if (row >= 0) {
        this.list.scrollTo(row);
      }
    }
    this.draw(false);
  }

  /** Scroll to line `line` (1-based) and mark it (the graph's "IR line" link). */
  revealLine(line: number): void {
    const row = this.rows.findIndex(r => r === line - 1);
    if (row < 0) {
      return;
    }
    this.list.scrollTo(row);
    this.list.node.querySelectorAll('.rl-revealed').forEach(n => n.classList.remove('rl-revealed'));
    for (const ln of Array.from(this.list.node.querySelectorAll('.ln'))) {
      if (ln.textContent?.trim() === String(line)) {
        ln.parentElement?.classList.add('rl-revealed', 'rl-current');
      }
    }
  }

  dispose(): void {
    this.token++;
    this.list.dispose();
    this.node.remove();
  }

  /** The rows: every line, but for HLO's source tables, each run one fold until opened. */
  private layout(): void {
    const runs = this.kind === 'hlo' ? hloTableRuns(this.lines) : [];
    const rows: TextRow[] = [];
    let i = 0;
    for (const run of runs) {
      for (; i < run.first; i++) {
        rows.push(i);
      }
      if (this.opened.has(run.first)) {
        continue;
      }
      const n = run.last - run.first + 1;
      rows.push({
        first: run.first,
        last: run.last,
        label: `▸ ${n} lines of source tables (${run.names.join(', ')}): click to show`
      });
      i = run.last + 1;
    }
    for (; i < this.lines.length; i++) {
      rows.push(i);
    }
    this.rows = rows;
  }

  private draw(top: boolean): void {
    const lines = this.lines;
    const highlight = this.kind === 'mlir';
    const digits = String(lines.length).length;
    this.list.setRows(this.rows.length, index => {
      const r = this.rows[index];
      if (typeof r !== 'number') {
        const fold = el('div', 'fold rl-hlo-tables', r.label);
        fold.setAttribute('role', 'button');
        fold.title = `lines ${r.first + 1}-${r.last + 1}: where XLA's ops come from in the source`;
        fold.addEventListener('click', () => {
          this.opened.add(r.first);
          this.layout();
          this.finder.search(false);
        });
        return fold;
      }
      const row = el('div', 'r');
      row.appendChild(el('span', 'ln', String(r + 1).padStart(digits)));
      const src = this.sources;
      const k = src ? src.at(r + 1) : 0;
      const mark = sourceMark(src, k);
      if (mark) {
        row.appendChild(mark);
      }
      if (src && k) {
        row.title = src.describe(k);
        if (src.picked(k)) {
          markPicked(row);
        }
      }
      const cell = codeLine(lines[r], [], { highlight, focus: this.finder.focus(index, 0) });
      const main = this.mainRange;
      if (this.names && main && r >= main[0] && r <= main[1]) {
        nameValues(cell, this.names);
      }
      const hits = this.finder.hits(index, 0);
      markMatches(cell, hits.ranges, hits.current);
      row.appendChild(cell);
      if (hits.current >= 0) {
        row.classList.add('rl-hit-row');
      }
      return row;
    }, top);
  }
}
