// Source provenance: which Python line each op of a stage came from (the payload's
// `provenance`), the hover text and gutter marks of the IR and diff views, and the "Source" list
// of the traced function's lines, where a click picks a line and every view highlights its ops.

import { el } from './dom';
import type { ExplorerPayload, Provenance } from './types';

export interface Frame {
  /** The file's name (called `path`: the report refuses the word file and a colon in its script). */
  path: string;
  line: number;
  col: number;
}

/** What a text or diff view needs to show the sources of one stage's lines. */
export interface LineSources {
  /** The source (1-based index into the payload's table) of displayed line `line`; 0: none. */
  at(line: number): number;
  /** Hover text of source `k`: `from kern.py:5:29 (called from line 11)`. */
  describe(k: number): string;
  /** The line of the traced function's code (the Source list) source `k` was traced at, else
   * the innermost of its calls there, or null. */
  codeLine(k: number): number | null;
  /** Whether an op of source `k` belongs to the picked line. */
  picked(k: number): boolean;
  /** Pick a line of the code (a click on a gutter mark). */
  pick(line: number): void;
}

/** Per stage, how many ops came from one line, and the other lines they were merged with. */
export interface LineCount {
  stage: number;
  count: number;
  merged: number[];
}

export const PICKED_BG = 'rgba(255,196,0,.28)';
export const MARK_FG = 'var(--rl-accent,#0969da)';

export class SourceMap {
  private readonly chains: Frame[][][];
  private readonly codeFile: number | null;
  /** Per source: the code lines any of its frames is at. */
  private readonly touches: Set<number>[];

  constructor(private readonly p: Provenance) {
    this.codeFile = p.code?.file ?? null;
    this.chains = p.sources.map(chains =>
      chains.map(flat => {
        const frames: Frame[] = [];
        for (let i = 0; i + 2 < flat.length; i += 3) {
          frames.push({ path: p.files[flat[i]] ?? '?', line: flat[i + 1], col: flat[i + 2] });
        }
        return frames;
      })
    );
    this.touches = p.sources.map(chains => {
      const lines = new Set<number>();
      for (const flat of chains) {
        for (let i = 0; i + 2 < flat.length; i += 3) {
          if (flat[i] === this.codeFile) {
            lines.add(flat[i + 1]);
          }
        }
      }
      return lines;
    });
  }

  /** The map of a payload, or null when it has no provenance. */
  static of(payload: ExplorerPayload): SourceMap | null {
    const p = payload.provenance;
    return p && Array.isArray(p.sources) && Array.isArray(p.maps) && Array.isArray(p.stages) ? new SourceMap(p) : null;
  }

  /** The traced function's lines: [first line number, lines, file name], or null. */
  code(): { first: number; lines: string[]; path: string } | null {
    const c = this.p.code;
    return c ? { first: c.first, lines: c.lines, path: this.p.files[c.file] ?? '' } : null;
  }

  /** Source of displayed line `line` (1-based) of stage `stage`: 1-based index, 0 for none. */
  at(stage: number, line: number): number {
    const map = this.p.maps[this.p.stages[stage] ?? -1];
    return map ? (map[line - 1] ?? 0) : 0;
  }

  frames(k: number): Frame[][] {
    return this.chains[k - 1] ?? [];
  }

  describe(k: number): string {
    const chains = this.frames(k);
    if (!chains.length) {
      return '';
    }
    const where = (f: Frame) => `${f.path}:${f.line}${f.col ? `:${f.col}` : ''}`;
    const parts = chains.map(chain => {
      const calls = chain.slice(1).map(f => (f.path === chain[0].path ? `line ${f.line}` : where(f)));
      return where(chain[0]) + (calls.length ? ` (called from ${calls.join(', ')})` : '');
    });
    return `from ${parts.join(' and ')}${chains.length > 1 ? ' (merged by a pass)' : ''}`;
  }

  codeLine(k: number): number | null {
    for (const chain of this.frames(k)) {
      for (const f of chain) {
        if (this.codeFile !== null && f.path === this.p.files[this.codeFile]) {
          return f.line;
        }
      }
    }
    return null;
  }

  /** Whether source `k` comes from code line `line` (traced there, or in a call made there). */
  touchesLine(k: number, line: number): boolean {
    return this.touches[k - 1]?.has(line) ?? false;
  }

  /** The displayed lines (1-based) of stage `stage` whose op came from code line `line`. */
  opsOf(stage: number, line: number): number[] {
    const map = this.p.maps[this.p.stages[stage] ?? -1] ?? [];
    const out: number[] = [];
    map.forEach((k, i) => {
      if (k && this.touchesLine(k, line)) {
        out.push(i + 1);
      }
    });
    return out;
  }

  /** Per stage: ops from code line `line`, and the other code lines they were merged with. */
  counts(line: number): LineCount[] {
    return this.p.stages.map((_, stage) => {
      const merged = new Set<number>();
      const ops = this.opsOf(stage, line);
      for (const n of ops) {
        const chains = this.frames(this.at(stage, n));
        if (chains.length > 1) {
          for (const chain of chains) {
            const inner = chain[0];
            if (this.codeFile !== null && inner.path === this.p.files[this.codeFile] && inner.line !== line) {
              merged.add(inner.line);
            }
          }
        }
      }
      return { stage, count: ops.length, merged: [...merged].sort((a, b) => a - b) };
    });
  }

  /** In words: `line 12: 5 ops in stage 0 (traced), 2 in stage 9 (final), merged with line 13`. */
  summary(line: number, names: string[]): string {
    const c = this.counts(line);
    if (!c.length) {
      return `line ${line}: no stage`;
    }
    const ops = (n: number) => `${n} op${n === 1 ? '' : 's'}`;
    const first = c[0];
    const last = c[c.length - 1];
    let text = `line ${line}: ${ops(first.count)} in stage 0 (${names[0] ?? ''})`;
    if (c.length > 1) {
      text += `, ${last.count} in stage ${last.stage} (${names[last.stage] ?? ''})`;
    }
    if (last.merged.length) {
      text += `, merged with line${last.merged.length > 1 ? 's' : ''} ${last.merged.join(', ')}`;
    }
    return text;
  }

  /** The LineSources of one stage, with `picked` the picked code line (or null). */
  forStage(stage: number, picked: number | null, pick: (line: number) => void): LineSources {
    return {
      at: line => this.at(stage, line),
      describe: k => this.describe(k),
      codeLine: k => this.codeLine(k),
      picked: k => picked !== null && k > 0 && this.touchesLine(k, picked),
      pick
    };
  }
}

/** The gutter mark of a line with source `k`: the code line (`py 12`); a click picks it. */
export function sourceMark(src: LineSources | null, k: number): HTMLElement | null {
  if (!src) {
    return null;
  }
  const line = k ? src.codeLine(k) : null;
  const mark = el('span', 'rl-src', k ? (line !== null ? `py ${line}` : 'py ·') : '');
  const s = mark.style;
  s.flex = '0 0 3.6em';
  s.display = 'inline-block';
  s.minWidth = '3.6em';
  s.fontSize = '10px';
  s.color = MARK_FG;
  s.userSelect = 'none';
  if (k) {
    mark.title = `${src.describe(k)}${line !== null ? ': click to pick the line' : ''}`;
    mark.dataset.src = String(line ?? '');
    if (line !== null) {
      s.cursor = 'pointer';
      mark.setAttribute('role', 'button');
      mark.addEventListener('click', ev => {
        ev.stopPropagation();
        src.pick(line);
      });
    }
  }
  return mark;
}

/** Make a diff's line number the mark of source `k` (its text stays the number): a bar in the
 * accent colour, the source on hover, a click picks the code line. */
export function markLineNumber(ln: HTMLElement, src: LineSources | null, k: number): void {
  if (!src || !k) {
    return;
  }
  const line = src.codeLine(k);
  ln.classList.add('rl-src');
  ln.dataset.src = String(line ?? '');
  ln.title = `${src.describe(k)}${line !== null ? `: click to pick line ${line}` : ''}`;
  ln.style.boxShadow = `inset -2px 0 0 ${MARK_FG}`;
  if (line !== null) {
    ln.style.cursor = 'pointer';
    ln.addEventListener('click', ev => {
      ev.stopPropagation();
      src.pick(line);
    });
  }
}

/** Mark a drawn row (or, `bar`: a diff's cell, keeping its colour) as holding an op of the
 * picked line. */
export function markPicked(node: HTMLElement, bar = false): void {
  node.classList.add('rl-src-hit');
  if (bar) {
    node.style.boxShadow = 'inset 4px 0 0 #d4a72c';
  } else {
    node.style.background = PICKED_BG;
  }
}

/** The "Source" list: the traced function's lines with their op counts in the shown stage; a
 * click picks a line (again: unpicks it). */
export class SourcePanel {
  readonly node: HTMLDetailsElement;
  private readonly summary: HTMLDivElement;
  private readonly list: HTMLDivElement;
  private readonly perStage: HTMLDivElement;

  constructor(private readonly onPick: (line: number | null) => void) {
    this.node = el('details', 'rl-source');
    this.node.open = true;
    const head = el('summary', 'rl-source-head', 'Source');
    head.title = 'the traced function: click a line to highlight its ops in every stage';
    this.summary = el('div', 'rl-source-summary rl-note');
    this.perStage = el('div', 'rl-source-stages rl-note');
    this.list = el('div', 'rl-source-lines');
    const ls = this.list.style;
    ls.maxHeight = '14em';
    ls.overflow = 'auto';
    ls.border = '1px solid var(--rl-line,#d0d7de)';
    ls.font = '12px/18px var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)';
    ls.margin = '2px 0 4px';
    this.node.append(head, this.list, this.summary, this.perStage);
  }

  /** Draw for stage `stage` of `map` with `picked` picked. */
  show(map: SourceMap, names: string[], stage: number, picked: number | null): void {
    const code = map.code();
    this.node.hidden = code === null;
    if (!code) {
      return;
    }
    (this.node.firstChild as HTMLElement).textContent = `Source · ${code.path}`;
    const digits = String(code.first + code.lines.length - 1).length;
    const rows = code.lines.map((text, i) => {
      const line = code.first + i;
      const n = map.opsOf(stage, line).length;
      const row = el('div', 'rl-source-line');
      row.dataset.line = String(line);
      const s = row.style;
      s.whiteSpace = 'pre';
      s.cursor = 'pointer';
      s.display = 'flex';
      const ln = el('span', 'rl-source-ln', String(line).padStart(digits));
      ln.style.cssText = 'flex:0 0 auto;min-width:3em;padding-right:.6em;text-align:right;color:var(--rl-mute,#656d76)';
      const count = el('span', 'rl-source-count', n ? `${n} op${n === 1 ? '' : 's'}` : '');
      count.style.cssText = `flex:0 0 5em;color:${MARK_FG};font-size:10px`;
      row.append(ln, count, el('span', 'rl-source-text', text));
      row.title = n
        ? `line ${line}: ${n} op${n === 1 ? '' : 's'} in this stage: click to highlight them`
        : `line ${line}: no op in this stage`;
      row.setAttribute('role', 'button');
      row.tabIndex = 0;
      if (line === picked) {
        row.classList.add('rl-source-picked');
        row.setAttribute('aria-pressed', 'true');
        s.background = PICKED_BG;
      }
      const choose = () => this.onPick(line === picked ? null : line);
      row.addEventListener('click', choose);
      row.addEventListener('keydown', ev => {
        if (ev.key === 'Enter' || ev.key === ' ') {
          ev.preventDefault();
          choose();
        }
      });
      return row;
    });
    const top = this.list.scrollTop;
    this.list.replaceChildren(...rows);
    this.list.scrollTop = top;
    if (picked === null) {
      this.summary.textContent = 'Click a line to highlight its ops in every stage.';
      this.perStage.replaceChildren();
      return;
    }
    this.summary.textContent = map.summary(picked, names);
    const parts = map.counts(picked).map(c => {
      const part = el('span', c.stage === stage ? 'rl-source-here' : '', `${c.stage}: ${c.count}`);
      part.title = `stage ${c.stage} ${names[c.stage] ?? ''}: ${c.count} op${c.count === 1 ? '' : 's'}` +
        (c.merged.length ? `, merged with line${c.merged.length > 1 ? 's' : ''} ${c.merged.join(', ')}` : '');
      if (c.stage === stage) {
        part.style.fontWeight = '600';
      }
      return part;
    });
    const out: (HTMLElement | string)[] = ['ops per stage: '];
    parts.forEach((p, i) => out.push(...(i ? [' · ', p] : [p])));
    this.perStage.replaceChildren(...out);
  }
}
