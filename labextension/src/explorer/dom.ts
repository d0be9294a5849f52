// Small DOM helpers. Everything the explorer shows is built as elements and text nodes: no
// string from the payload is ever parsed as HTML.

import { TOKEN_CLASSES, tokenizeLine } from '../mlir/tokens';
import { gapLabel, type Fitted } from './linefit';
import { mergeRanges } from './textops';

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function button(label: string, onClick: () => void, className = ''): HTMLButtonElement {
  const b = el('button', `rl-btn ${className}`.trim(), label);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

export const LONG_LINE = 2000;
const AROUND = 120;

/** Character ranges of a long line worth showing: around its changed spans, else its start. */
export function lineWindows(length: number, spans: readonly number[]): [number, number][] {
  if (length <= LONG_LINE) {
    return [[0, length]];
  }
  if (spans.length < 2) {
    return [[0, AROUND * 2]];
  }
  const out: [number, number][] = [];
  let shown = 0;
  for (let k = 0; k + 1 < spans.length && shown <= LONG_LINE; k += 2) {
    const lo = Math.max(0, spans[k] - AROUND);
    const hi = Math.min(length, spans[k + 1] + AROUND, spans[k] + LONG_LINE);
    const prev = out[out.length - 1];
    if (prev && lo <= prev[1]) {
      shown += Math.max(0, hi - prev[1]);
      prev[1] = Math.max(prev[1], hi);
    } else {
      shown += hi - lo;
      out.push([lo, hi]);
    }
  }
  return out;
}

/** An elided part of a line; `data-n` holds how many characters it stands for (search hits
 * are placed by it). */
function elided(count: number, compact: string | null): HTMLElement {
  const n = count.toLocaleString('en-US');
  const node = el('span', 'el', compact ?? `[${n} characters]`);
  node.dataset.n = String(count);
  if (compact) {
    node.title = `${n} unchanged characters: click to show the whole line`;
  }
  return node;
}

/** Append `text` (a part of a line starting at `offset`) with MLIR colours; tokens overlapping a
 * changed span also get class `x`. */
function appendTokens(
  into: HTMLElement,
  text: string,
  offset: number,
  spans: readonly number[],
  highlight: boolean
): void {
  let pos = offset;
  const tokens: [string, string][] = highlight
    ? tokenizeLine(text).map(([kind, t]) => [TOKEN_CLASSES[kind], t])
    : [['', text]];
  for (const [cls, t] of tokens) {
    const end = pos + t.length;
    let marked = false;
    for (let k = 0; k + 1 < spans.length; k += 2) {
      if (spans[k] < end && spans[k + 1] > pos) {
        marked = true;
        break;
      }
    }
    const full = marked ? `${cls} x`.trim() : cls;
    if (full) {
      into.appendChild(el('span', full, t));
    } else {
      into.appendChild(document.createTextNode(t));
    }
    pos = end;
  }
}

export interface LineOptions {
  /** Colour MLIR tokens (default true). */
  highlight?: boolean;
  /** The element's class (default `cd`). */
  className?: string;
  /** Flat [start, end, ...] ranges to keep in view besides `spans` (search hits). */
  focus?: readonly number[];
  /** How the line fits its column (`fitLine`): shown parts, elided runs and row breaks.
   * Without it only lines over LONG_LINE are cut. */
  fitted?: Fitted;
}

/** One line of code as an element: laid out as `fitted` says (rows after the first indented),
 * else whole, or around its changes and hits when over LONG_LINE characters. */
export function codeLine(line: string, spans: readonly number[] = [], options: LineOptions = {}): HTMLElement {
  const { highlight = true, className = 'cd', focus = [], fitted } = options;
  const node = el('span', className);
  if (fitted) {
    for (const s of fitted.segments) {
      if (s.kind === 'break') {
        node.appendChild(el('br', 'rl-wrap'));
      } else if (s.kind === 'gap') {
        node.appendChild(elided(s.hi - s.lo, gapLabel(s.lo, s.hi, line.length)));
      } else {
        appendTokens(node, line.slice(s.lo, s.hi), s.lo, spans, highlight);
      }
    }
    if (fitted.rows > 1) {
      node.classList.add('rl-wrapped');
      node.style.paddingLeft = `${fitted.indent}ch`;
      node.style.textIndent = `-${fitted.indent}ch`;
    }
    return node;
  }
  const keep = focus.length ? mergeRanges(spans, focus) : spans;
  let pos = 0;
  for (const [lo, hi] of lineWindows(line.length, keep)) {
    if (lo > pos) {
      node.appendChild(elided(lo - pos, null));
    }
    appendTokens(node, line.slice(lo, hi), lo, spans, highlight);
    pos = hi;
  }
  if (pos < line.length) {
    node.appendChild(elided(line.length - pos, null));
  }
  return node;
}

/** Wrap the parts of `cell` (a `codeLine`) at character ranges `ranges` of its line in
 * `<mark class="rl-hit">`; range `current` also gets `rl-hit-current`. */
export function markMatches(cell: HTMLElement, ranges: readonly [number, number][], current = -1): void {
  if (!ranges.length) {
    return;
  }
  const texts: [Text, number][] = [];
  let pos = 0;
  const walk = (parent: Node) => {
    for (const child of Array.from(parent.childNodes)) {
      if (child instanceof Text) {
        texts.push([child, pos]);
        pos += child.data.length;
      } else if (child instanceof HTMLElement && child.classList.contains('el')) {
        pos += Number(child.dataset.n ?? 0);
      } else {
        walk(child);
      }
    }
  };
  walk(cell);
  for (const [node, start] of texts) {
    const end = start + node.data.length;
    let at = start;
    const parts: Node[] = [];
    ranges.forEach(([a0, b0], k) => {
      const [a, b] = [Math.max(a0, at), Math.min(b0, end)];
      if (a < b) {
        if (a > at) {
          parts.push(document.createTextNode(node.data.slice(at - start, a - start)));
        }
        parts.push(el('mark', k === current ? 'rl-hit rl-hit-current' : 'rl-hit', node.data.slice(a - start, b - start)));
        at = b;
      }
    });
    if (parts.length) {
      if (at < end) {
        parts.push(document.createTextNode(node.data.slice(at - start)));
      }
      node.replaceWith(...parts);
    }
  }
}

export function formatSeconds(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return '-';
  }
  if (seconds >= 1) {
    return `${seconds.toFixed(2)} s`;
  }
  if (seconds >= 1e-3) {
    return `${(seconds * 1e3).toFixed(2)} ms`;
  }
  return `${(seconds * 1e6).toFixed(1)} µs`;
}

/** A size in bytes as reactant_lab writes it: `512 B`, `1.0 KiB`, `3.5 MiB`, `2.0 GiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  const [unit, size] = bytes < 1024 ** 2 ? ['KiB', 1024] : bytes < 1024 ** 3 ? ['MiB', 1024 ** 2] : ['GiB', 1024 ** 3];
  return `${(bytes / size).toFixed(1)} ${unit}`;
}

export function table(head: string[], rows: (string | number)[][], className = ''): HTMLTableElement {
  const t = el('table', className);
  const thead = el('thead');
  const tr = el('tr');
  for (const h of head) {
    tr.appendChild(el('th', '', h));
  }
  thead.appendChild(tr);
  const tbody = el('tbody');
  for (const r of rows) {
    const row = el('tr');
    for (const c of r) {
      row.appendChild(el('td', '', String(c)));
    }
    tbody.appendChild(row);
  }
  t.append(thead, tbody);
  return t;
}

/** `data:` URI of an SVG document, for an <img> (an <img> runs no script and loads nothing). */
export function svgDataUri(svg: string): string {
  const bytes = new TextEncoder().encode(svg);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return `data:image/svg+xml;base64,${btoa(binary)}`;
}
