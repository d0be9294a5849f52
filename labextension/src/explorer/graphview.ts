// The dataflow graph pane: the payload's SVG as an <img> in a pan/zoom viewport. Live, result
// nodes are clickable (over the image) and listed: a click asks the kernel for that result's
// backward slice, drawn in the same viewport.

import { button, el, svgDataUri } from './dom';
import type { ExplorerPayload, GraphEntry, SliceData } from './types';

export interface Hotspot {
  result: string;
  /** Box in percent of the image: left, top, width, height. */
  box: [number, number, number, number];
}

function numbers(text: string): number[] {
  return (text.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
}

/** Boxes of the result nodes of a Graphviz SVG whose first label line is one of `results`.
 * The SVG is parsed as XML data only; nothing of it enters the page. */
export function resultHotspots(svg: string, results: readonly string[]): Hotspot[] {
  const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
  const root = doc.documentElement;
  const vb = numbers(root.getAttribute('viewBox') ?? '');
  if (root.nodeName !== 'svg' || vb.length !== 4 || !vb[2] || !vb[3]) {
    return [];
  }
  const graph = doc.querySelector('g.graph');
  const tf = graph?.getAttribute('transform') ?? '';
  const scale = numbers(/scale\(([^)]*)\)/.exec(tf)?.[1] ?? '1 1');
  const shift = numbers(/translate\(([^)]*)\)/.exec(tf)?.[1] ?? '0 0');
  const [sx, sy] = [scale[0] ?? 1, scale[1] ?? scale[0] ?? 1];
  const [tx, ty] = [shift[0] ?? 0, shift[1] ?? 0];
  const wanted = new Set(results);
  const out: Hotspot[] = [];
  for (const node of Array.from(doc.querySelectorAll('g.node'))) {
    const title = node.querySelector('title')?.textContent ?? '';
    const label = node.querySelector('text')?.textContent ?? '';
    if (!/^res\d+$/.test(title) || !wanted.has(label)) {
      continue;
    }
    const shape = node.querySelector('path, polygon, ellipse');
    const raw = numbers(shape?.getAttribute('points') ?? shape?.getAttribute('d') ?? '');
    if (raw.length < 4) {
      continue;
    }
    const xs = raw.filter((_, i) => i % 2 === 0).map(x => (x + tx) * sx - vb[0]);
    const ys = raw.filter((_, i) => i % 2 === 1).map(y => (y + ty) * sy - vb[1]);
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    out.push({
      result: label,
      box: [(x0 / vb[2]) * 100, (y0 / vb[3]) * 100, ((x1 - x0) / vb[2]) * 100, ((y1 - y0) / vb[3]) * 100]
    });
  }
  return out;
}

/** A pan/zoom viewport around one image (drag to pan, Ctrl+wheel or the buttons to zoom). */
class PanZoom {
  readonly node: HTMLDivElement;
  readonly stage: HTMLDivElement;
  private scale = 1;
  private x = 0;
  private y = 0;

  constructor() {
    this.node = el('div', 'rl-panzoom');
    this.stage = el('div', 'rl-pz-stage');
    this.node.appendChild(this.stage);
    let drag: { x: number; y: number } | null = null;
    this.node.addEventListener('pointerdown', ev => {
      if ((ev.target as HTMLElement).closest('.rl-hotspot')) {
        return;
      }
      drag = { x: ev.clientX - this.x, y: ev.clientY - this.y };
      this.node.setPointerCapture(ev.pointerId);
    });
    this.node.addEventListener('pointermove', ev => {
      if (drag) {
        this.x = ev.clientX - drag.x;
        this.y = ev.clientY - drag.y;
        this.apply();
      }
    });
    this.node.addEventListener('pointerup', () => (drag = null));
    this.node.addEventListener('wheel', ev => {
      if (ev.ctrlKey || ev.metaKey) {
        ev.preventDefault();
        const r = this.node.getBoundingClientRect();
        this.zoom(ev.deltaY < 0 ? 1.2 : 1 / 1.2, ev.clientX - r.left, ev.clientY - r.top);
      }
    });
  }

  zoom(factor: number, cx = this.node.clientWidth / 2, cy = this.node.clientHeight / 2): void {
    const next = Math.min(8, Math.max(0.05, this.scale * factor));
    this.x = cx - ((cx - this.x) * next) / this.scale;
    this.y = cy - ((cy - this.y) * next) / this.scale;
    this.scale = next;
    this.apply();
  }

  /** Show the whole image, at most at its natural size. */
  fit(width: number, height: number): void {
    const vw = this.node.clientWidth || 800;
    const vh = this.node.clientHeight || 480;
    this.scale = Math.min(1, vw / Math.max(1, width), vh / Math.max(1, height));
    this.x = (vw - width * this.scale) / 2;
    this.y = 0;
    this.apply();
  }

  private apply(): void {
    this.stage.style.transform = `translate(${this.x}px, ${this.y}px) scale(${this.scale})`;
  }
}

export class GraphView {
  readonly node: HTMLDivElement;
  private readonly caption: HTMLDivElement;
  private readonly view = new PanZoom();
  private readonly footer: HTMLDivElement;
  private graph: GraphEntry | undefined;
  private stageIndex = 0;
  private results: string[] = [];

  /** `onSlice` is set live only: clicking a result asks for its slice. */
  constructor(private readonly onSlice?: (stage: number, result: string) => void) {
    this.node = el('div', 'rl-graph');
    const bar = el('div', 'rl-toolbar');
    bar.append(
      button('+', () => this.view.zoom(1.25), 'rl-zoom-in'),
      button('−', () => this.view.zoom(0.8), 'rl-zoom-out'),
      button('fit', () => this.fit(), 'rl-fit'),
      el('span', 'rl-hint', 'drag to pan · Ctrl+wheel to zoom')
    );
    this.caption = el('div', 'rl-note');
    this.footer = el('div', 'rl-graph-footer');
    this.node.append(bar, this.caption, this.view.node, this.footer);
  }

  /** The graph drawn for `stage`'s structure. */
  show(payload: ExplorerPayload, stage: number): void {
    this.stageIndex = stage;
    this.results = payload.signature.results.map(r => r.path);
    this.graph = payload.graphs.find(g => g.stages.includes(stage));
    this.showGraph();
  }

  showSlice(data: SliceData): void {
    if (data.stage !== this.stageIndex) {
      return;
    }
    this.caption.textContent = `Backward slice of ${data.result} at stage ${data.stage}: the ops it depends on.`;
    this.setImage(data.svg, `slice of ${data.result}`, []);
    this.footer.replaceChildren(button('back to the whole graph', () => this.showGraph(), 'rl-unslice'));
  }

  showPending(result: string): void {
    this.caption.textContent = `Drawing the slice of ${result}…`;
  }

  showError(message: string): void {
    this.caption.textContent = message;
    this.caption.classList.add('rl-error-text');
  }

  private showGraph(): void {
    this.caption.classList.remove('rl-error-text');
    const g = this.graph;
    if (!g) {
      this.caption.textContent = 'No graph was drawn for this stage (at most 8 are kept).';
      this.setImage(null, '', []);
      this.footer.replaceChildren();
      return;
    }
    const notes = [
      g.stage !== this.stageIndex ? `Same structure as stage ${g.stage}.` : '',
      g.note ?? '',
      g.error ?? ''
    ];
    this.caption.textContent = notes.filter(Boolean).join(' ');
    const hotspots = g.svg && this.onSlice ? resultHotspots(g.svg, this.results) : [];
    this.setImage(g.svg ?? null, `dataflow graph of stage ${g.stage}`, hotspots);
    this.footer.replaceChildren();
    if (this.onSlice && this.results.length) {
      const onSlice = this.onSlice;
      this.footer.append(el('span', '', 'Slice of one result: '));
      for (const r of this.results.slice(0, 50)) {
        this.footer.append(button(r, () => onSlice(this.stageIndex, r), 'rl-slice'));
      }
    }
  }

  private setImage(svg: string | null, alt: string, hotspots: Hotspot[]): void {
    if (!svg) {
      this.view.stage.replaceChildren();
      return;
    }
    const img = el('img', 'rl-graph-img');
    img.alt = alt;
    img.draggable = false;
    img.addEventListener('load', () => this.fit());
    img.src = svgDataUri(svg);
    const layer = el('div', 'rl-hotspots');
    for (const h of hotspots) {
      const spot = el('button', 'rl-hotspot');
      spot.type = 'button';
      spot.title = `slice of ${h.result}`;
      spot.setAttribute('aria-label', `slice of ${h.result}`);
      const [l, t, w, ht] = h.box;
      Object.assign(spot.style, { left: `${l}%`, top: `${t}%`, width: `${w}%`, height: `${ht}%` });
      spot.addEventListener('click', () => this.onSlice?.(this.stageIndex, h.result));
      layer.appendChild(spot);
    }
    this.view.stage.replaceChildren(img, layer);
  }

  private fit(): void {
    const img = this.view.stage.querySelector('img');
    if (img) {
      this.view.fit(img.naturalWidth, img.naturalHeight);
    }
  }
}
