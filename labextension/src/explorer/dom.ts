// Small DOM helpers. Everything the explorer shows is built as elements and text nodes: no
// string from the payload is ever parsed as HTML.

import { TOKEN_CLASSES, tokenizeLine } from '../mlir/tokens';

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

function elided(count: number): HTMLElement {
  return el('span', 'el', `[${count.toLocaleString('en-US')} characters]`);
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

/** One line of code as an element; very long lines are shown around their changes. */
export function codeLine(
  line: string,
  spans: readonly number[] = [],
  highlight = true,
  className = 'cd'
): HTMLElement {
  const node = el('span', className);
  const windows = lineWindows(line.length, spans);
  let pos = 0;
  for (const [lo, hi] of windows) {
    if (lo > pos) {
      node.appendChild(elided(lo - pos));
    }
    appendTokens(node, line.slice(lo, hi), lo, spans, highlight);
    pos = hi;
  }
  if (pos < line.length) {
    node.appendChild(elided(line.length - pos));
  }
  return node;
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
