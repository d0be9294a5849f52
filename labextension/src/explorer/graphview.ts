// The dataflow graph pane. With the payload's graph model (every node of main), the graph is laid
// out here and drawn as SVG elements: it fits the pane's width (never below a legible scale) and
// scrolls; constants fold into their users; regions open and close; any node is clickable for its
// panel (SSA name, op, attributes, types, Python source line, links to its IR line) and its slice
// (producers / consumers); search by op name or SSA value; past DEFAULT_CAP boxes, "draw anyway"
// with a progress bar, or "draw a slice" of one result. Without a model (old payloads, modules
// past the payload's cap) the Graphviz summary is shown as an image in the theme's colours; live,
// "draw anyway" and "draw a slice" ask the kernel for the stage's model and draw it here; saved,
// the summary says how to get them. A sharded module's nodes are
// tinted by sharding (a legend above names the colours and the mesh), and the ops XLA's
// partitioner inserted collectives for are outlined and labelled ⇄.

import { button, el, svgDataUri } from './dom';
import {
  COLLECTIVE,
  DEFAULT_CAP,
  GraphIndex,
  LINE_H,
  layoutSteps,
  segPath,
  type LBox,
  type Layout,
  type ViewOptions
} from './graphlayout';
import { SHARD_COLOURS, themedSvg, type Palette } from './graphstyle';
import { GraphDiffControls, type FoundDiff } from './graphdiffview';
import { edgeStatus, graphUnion, matchNowToOld, type GraphUnion } from './graphdiff';
import { carriedText, pyName } from './names';
import { kernelNamed, type CodeKind } from './codeview';
import type { ExplorerPayload, GraphData, GraphDiffEntry, GraphEntry, GraphModel } from './types';

let svgNamespace = '';
/** SVG's namespace, as the HTML parser assigns it (the bundle names no URL). */
function svgNs(): string {
  if (!svgNamespace) {
    const doc = new DOMParser().parseFromString('<svg></svg>', 'text/html');
    svgNamespace = doc.body.firstElementChild?.namespaceURI ?? '';
  }
  return svgNamespace;
}
/** The initial zoom never goes below this (11px text stays over 8px). */
export const MIN_SCALE = 0.75;
const PAD_X = 7;
let markerIds = 0;

export interface Hotspot {
  /** The result's path (what a slice asks for). */
  result: string;
  /** Its label: the name the user wrote for it. */
  label: string;
  /** Box in percent of the image: left, top, width, height. */
  box: [number, number, number, number];
}

/** Where a node's op is in the module text: the explorer switches to that tab and line. */
export interface RevealRequest {
  tab: 'ir' | 'diff';
  stage: number;
  line: number;
}

function numbers(text: string): number[] {
  return (text.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
}

/** Boxes of the result nodes of a Graphviz SVG whose first label line is one of `results`'
 * names (the name the user wrote, else the path). The SVG is parsed as XML data only; nothing
 * of it enters the page. */
export function resultHotspots(svg: string, results: readonly { path: string; name: string }[]): Hotspot[] {
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
  const wanted = new Map(results.map(r => [r.name, r.path]));
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
      result: wanted.get(label) ?? label,
      label,
      box: [(x0 / vb[2]) * 100, (y0 / vb[3]) * 100, ((x1 - x0) / vb[2]) * 100, ((y1 - y0) / vb[3]) * 100]
    });
  }
  return out;
}

/** The initial scale of a drawing `width` wide in a pane `viewport` wide: fit the width, at most
 * the natural size, never below MIN_SCALE (the pane scrolls instead). */
export function fitScale(width: number, viewport: number): number {
  return Math.min(1, Math.max(MIN_SCALE, viewport / Math.max(1, width)));
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

  /** Fit the image's width (at most its natural size, never below MIN_SCALE); scroll the rest. */
  fit(width: number): void {
    const vw = this.node.clientWidth || 800;
    this.scale = fitScale(width, vw);
    this.x = Math.max(0, (vw - width * this.scale) / 2);
    this.y = 0;
    this.apply();
  }

  private apply(): void {
    this.stage.style.transform = `translate(${this.x}px, ${this.y}px) scale(${this.scale})`;
  }
}

function svgEl<K extends keyof SVGElementTagNameMap>(tag: K, cls = ''): SVGElementTagNameMap[K] {
  const node = document.createElementNS(svgNs(), tag) as SVGElementTagNameMap[K];
  if (cls) {
    node.setAttribute('class', cls);
  }
  return node;
}

function row(label: string, ...content: (Node | string)[]): HTMLDivElement {
  const r = el('div', 'rl-gp-row');
  r.append(el('span', 'rl-gp-key', label), ...content);
  return r;
}

/** One entry of the sharding legend: a swatch (its classes) and what it stands for. */
function legendKey(swatch: string, what: Node | string): HTMLSpanElement {
  const key = el('span', 'rl-shard-key');
  key.append(el('span', swatch), what);
  return key;
}

export class GraphView {
  readonly node: HTMLDivElement;
  private readonly caption: HTMLDivElement;
  private readonly legend: HTMLDivElement;
  private readonly legacy = new PanZoom();
  private readonly pane: HTMLDivElement;
  private readonly svgBox: HTMLDivElement;
  private readonly panel: HTMLDivElement;
  private readonly progress: HTMLDivElement;
  private readonly footer: HTMLDivElement;
  private readonly tools: HTMLSpanElement;
  private readonly foldBox: HTMLInputElement;
  private readonly searchBox: HTMLInputElement;
  private readonly searchCount: HTMLSpanElement;
  private graph: GraphEntry | undefined;
  private stageIndex = 0;
  private results: { path: string; name: string }[] = [];
  private readonly indexes = new WeakMap<object, GraphIndex>();
  private ix: GraphIndex | null = null;
  private opts: ViewOptions = { fold: true, expanded: new Set(), only: null };
  private drawn: Layout | null = null;
  private drawnFor: { ix: GraphIndex | null; opts: ViewOptions | null } = { ix: null, opts: null };
  private svg: SVGSVGElement | null = null;
  private boxOf = new Map<number, SVGGElement>();
  private scale = 1;
  private selected = -1;
  private slice: { of: number; dir: 'producers' | 'consumers'; set: Set<number> } | null = null;
  private hits: number[] = [];
  private hit = -1;
  private forced = false;
  private count = 0;
  private token = 0;
  /** The graph diff: the box, the stage compared, the union drawn (null: the stage alone). */
  private readonly diff: GraphDiffControls;
  private union: GraphUnion | null = null;
  private readonly unions = new WeakMap<object, GraphUnion[]>();
  private compare: number | null = null;
  /** Models the kernel sent for graphs the payload holds only as summaries, and graph diffs
   * (their stages a GraphEntry's) for "changes from" between such graphs. */
  private readonly fetched = new WeakMap<GraphEntry, GraphModel>();
  private fetchedDiffs: GraphDiffEntry[] = [];
  /** The "changes from" pair asked of the kernel (`stage:compare`), and pairs it refused. */
  private askedCompare: string | null = null;
  private readonly refusedCompare = new Map<string, string>();
  private payload: ExplorerPayload | null = null;
  /** Kernels XLA:CPU emitted (a fusion's panel links to its code). */
  private kernels = new Set<string>();
  /** What to draw once the asked-for model arrives: everything, or one result's slice. */
  private wanted: { stage: number; result: string | null } | null = null;
  private shownSvg: { svg: string; alt: string; hotspots: Hotspot[] } | null = null;
  private readonly themeWatch: MutationObserver | null;

  /** `onModel` is set live only: for a graph the payload holds only as a summary, it asks the
   * kernel for the stage's model (with `compare`, that stage's too and their graph diff;
   * `showModel` gets them). `onReveal` opens the IR (or diff) at an op's line, `onCode` a
   * kernel's LLVM IR or assembly. */
  constructor(
    private readonly onModel?: (stage: number, compare?: number) => void,
    private readonly onReveal?: (where: RevealRequest) => void,
    onBase?: (base: number | null) => void,
    private readonly onCode?: (kernel: string, what: CodeKind) => void
  ) {
    this.node = el('div', 'rl-graph');
    const bar = el('div', 'rl-toolbar rl-graph-bar');
    this.tools = el('span', 'rl-graph-tools');
    const fold = el('label', 'rl-fold');
    this.foldBox = el('input');
    this.foldBox.type = 'checkbox';
    this.foldBox.checked = true;
    this.foldBox.addEventListener('change', () => this.setOptions({ ...this.opts, fold: this.foldBox.checked }));
    fold.append(this.foldBox, ' fold constants');
    fold.title = 'draw constants (and broadcasts of constants) inside the ops that use them';
    this.searchBox = el('input', 'rl-graph-search');
    this.searchBox.type = 'search';
    this.searchBox.placeholder = 'find op or %value';
    this.searchBox.setAttribute('aria-label', 'find nodes by op name or SSA value');
    this.searchBox.addEventListener('input', () => this.search());
    this.searchBox.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.nextHit(ev.shiftKey ? -1 : 1);
      }
    });
    this.searchCount = el('span', 'rl-note rl-graph-hits');
    this.diff = new GraphDiffControls(() => this.redrawDiff(), onBase);
    this.tools.append(
      fold,
      button('open regions', () => this.setOptions({ ...this.opts, expanded: new Set(this.ix?.children.keys() ?? []) }), 'rl-open-all'),
      button('close regions', () => this.setOptions({ ...this.opts, expanded: new Set() }), 'rl-close-all'),
      this.searchBox,
      this.searchCount
    );
    bar.append(
      button('−', () => this.zoom(0.8), 'rl-zoom-out'),
      button('+', () => this.zoom(1.25), 'rl-zoom-in'),
      button('fit width', () => this.fit(), 'rl-fit'),
      this.tools,
      this.diff.node,
      el('span', 'rl-hint', 'click a node for its panel · drag to pan · Ctrl+wheel to zoom')
    );
    this.caption = el('div', 'rl-note rl-graph-note');
    this.legend = el('div', 'rl-graph-legend');
    this.legend.setAttribute('aria-label', 'sharding legend');
    this.legend.hidden = true;
    this.progress = el('div', 'rl-graph-progress');
    this.progress.hidden = true;
    this.pane = el('div', 'rl-graph-pane');
    this.svgBox = el('div', 'rl-gview');
    this.svgBox.tabIndex = 0;
    this.svgBox.setAttribute('aria-label', 'dataflow graph');
    this.panel = el('div', 'rl-gpanel');
    this.panel.hidden = true;
    this.pane.append(this.svgBox, this.panel);
    this.footer = el('div', 'rl-graph-footer');
    this.node.append(bar, this.caption, this.legend, this.diff.legend, this.progress, this.pane, this.legacy.node, this.footer);
    this.svgBox.addEventListener('click', ev => {
      const g = (ev.target as Element).closest?.('.rl-gn') as SVGGElement | null;
      if (g?.dataset.i !== undefined) {
        this.select(Number(g.dataset.i), (ev.target as Element).closest('.rl-gtoggle') !== null);
      }
    });
    this.svgBox.addEventListener('keydown', ev => {
      const g = (ev.target as Element).closest?.('.rl-gn') as SVGGElement | null;
      if (g && (ev.key === 'Enter' || ev.key === ' ')) {
        ev.preventDefault();
        this.select(Number(g.dataset.i));
      }
    });
    this.svgBox.addEventListener('wheel', ev => {
      if (ev.ctrlKey || ev.metaKey) {
        ev.preventDefault();
        this.zoom(ev.deltaY < 0 ? 1.2 : 1 / 1.2);
      }
    });
    let drag: { x: number; y: number; l: number; t: number } | null = null;
    this.svgBox.addEventListener('pointerdown', ev => {
      if ((ev.target as Element).closest('.rl-gn') || ev.button !== 0) {
        return;
      }
      drag = { x: ev.clientX, y: ev.clientY, l: this.svgBox.scrollLeft, t: this.svgBox.scrollTop };
    });
    this.svgBox.addEventListener('pointermove', ev => {
      if (drag && ev.buttons) {
        this.svgBox.scrollLeft = drag.l - (ev.clientX - drag.x);
        this.svgBox.scrollTop = drag.t - (ev.clientY - drag.y);
      }
    });
    this.svgBox.addEventListener('pointerup', () => (drag = null));
    // The summary picture takes the theme's colours when it is drawn: again when they change.
    const body = typeof document !== 'undefined' ? document.body : null;
    this.themeWatch = body && typeof MutationObserver !== 'undefined' ? new MutationObserver(() => this.retheme()) : null;
    this.themeWatch?.observe(body as HTMLElement, { attributes: true, attributeFilter: ['data-jp-theme-light', 'data-jp-theme-name'] });
  }

  dispose(): void {
    this.themeWatch?.disconnect();
    this.token++;
  }

  /** The graph drawn for `stage`'s structure; with "changes from" on, merged with the graph of
   * stage `compare` (the explorer's compared stage; `base` as the state holds it). */
  show(payload: ExplorerPayload, stage: number, compare: number | null = null, base: number | null = null): void {
    const start = performance.now();
    this.stageIndex = stage;
    this.compare = compare;
    this.results = payload.signature.results.map(r => ({ path: r.path, name: pyName(payload.signature, r.path) }));
    if (payload !== this.payload) {
      this.payload = payload;
      this.fetchedDiffs = [];
      this.askedCompare = null;
      this.refusedCompare.clear();
      this.kernels = new Set((payload.xla?.code?.kernels ?? []).map(k => k.name));
    }
    const g = payload.graphs.find(e => e.stages.includes(stage));
    const fetched = { model: (e: GraphEntry) => this.fetched.get(e), diffs: this.fetchedDiffs };
    const found = this.diff.sync(payload, stage, compare, base, fetched);
    if (!found && compare !== null) {
      this.askCompare(payload, stage, compare);
    }
    const union = found ? this.unionOf(found) : null;
    const changed = g !== this.graph || union !== this.union;
    this.graph = g;
    this.union = union;
    this.diff.fillLegend(union);
    if (changed) {
      this.forced = false;
      this.selected = -1;
      this.slice = null;
      this.useModel(union ? union.model : g ? (g.model ?? this.fetched.get(g)) : undefined);
    }
    this.showGraph(start);
  }

  /** The union of a graph diff, made once per diff entry and direction. */
  private unionOf(found: FoundDiff): GraphUnion {
    const cached = this.unions.get(found.entry) ?? [];
    const k = found.reversed ? 1 : 0;
    if (!cached[k]) {
      const { toOld, changed } = matchNowToOld(found.entry, found.old.nodes.length, found.now.nodes.length, found.reversed);
      cached[k] = graphUnion(found.old, found.now, toOld, changed);
      this.unions.set(found.entry, cached);
    }
    return cached[k];
  }

  /** The "changes from" box or its stage changed: draw again. */
  private redrawDiff(): void {
    const payload = this.diff.payload;
    if (payload) {
      this.show(payload, this.stageIndex, this.compare, this.diff.base);
    }
  }

  /** Live, "changes from" between graphs the payload cannot compare (one held only as a
   * summary, or their diff not kept): ask the kernel for both models and their diff, once. */
  private askCompare(payload: ExplorerPayload, stage: number, compare: number): void {
    const graphOf = (i: number) => payload.graphs.find(e => e.stages.includes(i));
    const [gOld, gNow] = [graphOf(compare), graphOf(stage)];
    if (!this.onModel || !this.diff.on || !gOld || !gNow || gOld === gNow) {
      return;
    }
    const key = `${stage}:${compare}`;
    const refused = this.refusedCompare.get(key);
    if (refused !== undefined) {
      this.diff.explain(`Could not compare stage ${compare} and stage ${stage}: ${refused}`);
      return;
    }
    this.diff.explain(`Asking the kernel for the graphs of stage ${compare} and stage ${stage}, to draw the changes…`);
    if (this.askedCompare !== key) {
      this.askedCompare = key;
      this.onModel(stage, compare);
    }
  }

  /** What the kernel sent for stage `data.stage` (asked for by "draw anyway", "draw a slice",
   * or "changes from" with `data.compare`): drawn whole, the asked-for result's slice of it,
   * or the graph diff. */
  showModel(data: GraphData): void {
    if (data.compare !== undefined && data.compare_model && data.diff) {
      this.keepCompared(data);
      return;
    }
    const { stage, model } = data;
    const g = this.graph;
    if (!g || !g.stages.includes(stage)) {
      return;
    }
    this.fetched.set(g, model);
    this.useModel(model);
    const wanted = this.wanted;
    this.wanted = null;
    this.pane.hidden = this.tools.hidden = false;
    this.legacy.node.hidden = true;
    if (wanted?.result) {
      this.drawSliceOf(wanted.result);
    } else {
      this.forced = true;
      this.showGraph();
    }
  }

  /** Keep the models and graph diff the kernel sent for "changes from", and draw them. */
  private keepCompared(data: GraphData): void {
    const payload = this.payload;
    if (!payload || !data.diff || !data.compare_model || data.compare === undefined) {
      return;
    }
    const graphOf = (i: number) => payload.graphs.find(e => e.stages.includes(i));
    const [gNow, gOld] = [graphOf(data.stage), graphOf(data.compare)];
    const [gBefore, gAfter] = [graphOf(data.diff.before), graphOf(data.diff.after)];
    if (!gNow || !gOld || !gBefore || !gAfter) {
      return;
    }
    this.fetched.set(gNow, data.model);
    this.fetched.set(gOld, data.compare_model);
    this.fetchedDiffs.push({ ...data.diff, before: gBefore.stage, after: gAfter.stage });
    if (this.askedCompare === `${data.stage}:${data.compare}`) {
      this.askedCompare = null;
    }
    this.show(payload, this.stageIndex, this.compare, this.diff.base);
  }

  showError(message: string): void {
    if (this.askedCompare !== null) {
      this.refusedCompare.set(this.askedCompare, message);
      this.askedCompare = null;
      if (this.payload) {
        this.show(this.payload, this.stageIndex, this.compare, this.diff.base);
      }
      return;
    }
    this.wanted = null;
    this.caption.textContent = message;
    this.caption.classList.add('rl-error-text');
    this.progress.querySelectorAll('button').forEach(b => (b.disabled = false));
  }

  private useModel(model: GraphModel | undefined): void {
    this.ix = model ? (this.indexes.get(model) ?? new GraphIndex(model)) : null;
    if (model && this.ix) {
      this.indexes.set(model, this.ix);
      this.opts = { fold: this.foldBox.checked, expanded: this.ix.defaultExpanded(), only: null };
    }
    this.fillLegend();
  }

  private showGraph(start = performance.now()): void {
    this.caption.classList.remove('rl-error-text');
    this.footer.replaceChildren();
    const g = this.graph;
    const interactive = this.ix !== null;
    this.tools.hidden = !interactive;
    // live, a summary's changes from another stage come from the kernel too
    this.diff.node.hidden = !interactive && !(this.onModel && g?.kind === 'summary');
    this.pane.hidden = !interactive;
    this.legacy.node.hidden = interactive;
    if (!g) {
      this.caption.textContent = 'No graph was drawn for this stage (at most 8 are kept).';
      this.setImage(null, '', []);
      return;
    }
    const same = g.stage !== this.stageIndex ? `Same structure as stage ${g.stage}.` : '';
    if (this.ix) {
      this.legacy.stage.replaceChildren();
      this.caption.textContent = same;
      this.draw(start);
      return;
    }
    const ops = g.ops ? `${g.ops.toLocaleString('en-US')} ops` : 'This stage';
    const size = g.kind === 'summary' ? `${ops}: too many for the explorer to keep op by op.` : '';
    this.caption.textContent = [this.diff.caption(null).trim(), same, size, g.error ?? ''].filter(Boolean).join(' ');
    const live = this.onModel !== undefined && g.kind === 'summary';
    const hotspots = g.svg && live ? resultHotspots(g.svg, this.results) : [];
    this.setImage(g.svg ?? null, `${g.kind === 'summary' ? 'summary' : 'dataflow'} graph of stage ${g.stage}`, hotspots);
    if (g.kind === 'summary') {
      this.progress.hidden = false;
      this.progress.replaceChildren(this.summaryOffer(live ? 'live' : 'saved', g.ops ?? 0));
    } else {
      this.progress.hidden = true;
    }
  }

  /** What the summary picture shows, and how to get more: "draw anyway" (the whole graph) and
   * "draw a slice" (one result's), here from the model (`model`), live by asking the kernel for
   * it (`live`); saved without a model, how a live explorer draws them (`saved`). */
  private summaryOffer(how: 'model' | 'live' | 'saved', count: number): HTMLElement {
    const wrap = el('div', 'rl-graph-summary');
    const what =
      'The picture is a summary: which results depend on which arguments; each edge counts the ops of ' +
      "the result's backward slice that depend on the argument.";
    if (how === 'saved') {
      wrap.append(
        el('span', '', `${what} `),
        el(
        'span',
        'rl-graph-offer',
        'A live explorer (run the cell again, with its kernel) draws the whole graph, one result’s slice, or the ' +
          'changes from another stage, on request.'
      )
      );
      return wrap;
    }
    const many = count.toLocaleString('en-US');
    const slow = how === 'live' ? `the kernel sends all ${many} ops, and laying them out takes a while` : 'laying them out takes a few seconds';
    const anyway = button('draw anyway', () => this.drawAnyway(), 'rl-draw-anyway');
    anyway.title = `draw every box (${slow})`;
    const offer = el('span', 'rl-graph-offer');
    offer.append(anyway);
    if (this.results.length) {
      const pick = el('select', 'rl-slice-result');
      pick.setAttribute('aria-label', 'result whose slice to draw');
      for (const r of this.results) {
        pick.appendChild(new Option(r.name, r.path));
      }
      const slice = button('draw its slice', () => this.drawSliceOf(pick.value), 'rl-draw-slice');
      slice.title = 'draw only the ops this result depends on';
      offer.append(el('span', '', ' or the slice of '), pick, slice);
    }
    wrap.append(el('span', '', `${what} `), offer);
    return wrap;
  }

  private drawAnyway(): void {
    if (this.ix) {
      this.forced = true;
      this.draw();
    } else {
      this.askModel(null);
    }
  }

  /** Draw only what result `path` depends on (its producers slice). */
  private drawSliceOf(path: string): void {
    const ix = this.ix;
    if (!ix) {
      this.askModel(path);
      return;
    }
    const results = ix.nodes.map((n, i) => [n, i] as const).filter(([n]) => n.kind === 'result');
    const at = results.find(([n]) => (n.path ?? n.name) === path) ?? results[this.results.findIndex(r => r.path === path)];
    if (!at) {
      this.showError(`no result ${this.resultName(path)} in this stage's graph`);
      return;
    }
    this.selected = at[1];
    this.setSlice(at[1], 'producers');
    this.drawOnlySlice(at[1]);
    this.showPanel(at[1]);
  }

  /** The name the user wrote for result `path` (its path where none). */
  private resultName(path: string): string {
    return this.results.find(r => r.path === path)?.name ?? path;
  }

  /** Live: ask the kernel for this stage's model; `result` is the slice to draw once it comes
   * (null: everything). */
  private askModel(result: string | null): void {
    if (!this.onModel || this.wanted) {
      return;
    }
    this.wanted = { stage: this.stageIndex, result };
    this.caption.classList.remove('rl-error-text');
    this.caption.textContent = `Asking the kernel for every op of stage ${this.stageIndex}${result ? ` (to draw the slice of ${this.resultName(result)})` : ''}…`;
    this.progress.querySelectorAll('button').forEach(b => (b.disabled = true));
    this.onModel(this.stageIndex);
  }

  /** The legend of a sharded graph: the mesh, each sharding's colour, the collectives' mark;
   * hidden when no node has a sharding or a collective. */
  private fillLegend(): void {
    const ix = this.ix;
    const nodes = ix?.nodes ?? [];
    const anyReplicated = nodes.some(n => n.sharding && !ix?.shardColour.has(n.sharding));
    const anyCollective = nodes.some((_, i) => ix?.collective(i));
    const parts: HTMLElement[] = [];
    if (ix && (ix.shardColour.size || anyReplicated || anyCollective)) {
      const mesh = ix.model.mesh;
      parts.push(el('span', 'rl-note rl-mesh', mesh ? `mesh ${mesh}` : 'no mesh'));
      const shown = [...ix.shardColour].slice(0, 16);
      for (const [sharding, k] of shown) {
        parts.push(legendKey(`rl-swatch rl-sh-${k % SHARD_COLOURS.length}`, el('code', '', sharding)));
      }
      if (ix.shardColour.size > shown.length) {
        parts.push(el('span', 'rl-note', `+${ix.shardColour.size - shown.length} more shardings`));
      }
      if (anyReplicated) {
        parts.push(legendKey('rl-swatch', 'replicated'));
      }
      if (anyCollective) {
        parts.push(legendKey('rl-swatch rl-coll-swatch', `${COLLECTIVE} collectives between devices`));
      }
    }
    this.legend.replaceChildren(...parts);
    this.legend.hidden = !parts.length;
  }

  private setOptions(opts: ViewOptions): void {
    this.opts = opts;
    if (this.ix) {
      this.draw();
    }
  }

  /** Lay out and draw the current view: at once up to DEFAULT_CAP boxes, else after "draw
   * anyway", in steps with a progress bar. */
  private draw(start = performance.now()): void {
    const ix = this.ix;
    if (!ix) {
      return;
    }
    const token = ++this.token;
    const count = ix.drawnCount(this.opts);
    this.count = count;
    this.updateCaption();
    this.footer.replaceChildren(
      ...(this.opts.only ? [button('back to the whole graph', () => this.setOptions({ ...this.opts, only: null }), 'rl-unslice')] : [])
    );
    if (count > DEFAULT_CAP && !this.forced) {
      this.clearDrawing();
      const wrap = el('div', 'rl-graph-cap');
      const picture = this.graph?.kind === 'summary' && !!this.graph.svg;
      const offer = this.summaryOffer('model', count);
      if (!picture) {
        offer.firstChild?.remove(); // no summary picture to explain
      }
      wrap.append(
        el(
          'span',
          '',
          `${count.toLocaleString('en-US')} boxes is over the default cap of ${DEFAULT_CAP.toLocaleString('en-US')}: ` +
            'laying them out takes a few seconds. Search for a node and draw its slice, close regions, '
        ),
        offer
      );
      this.progress.hidden = false;
      this.progress.replaceChildren(wrap);
      if (picture && this.graph?.svg) {
        this.legacy.node.hidden = false;
        this.setImage(this.graph.svg, `summary graph of stage ${this.graph.stage}`, resultHotspots(this.graph.svg, this.results));
      }
      return;
    }
    this.legacy.node.hidden = true;
    if (this.drawn && this.drawnFor.ix === ix && this.drawnFor.opts === this.opts && this.svg) {
      this.progress.hidden = true;
      this.paintHits();
      return; // the same view: already drawn (the tab was only switched away from)
    }
    const steps = layoutSteps(ix, this.opts);
    if (count <= DEFAULT_CAP) {
      this.progress.hidden = true;
      let r = steps.next();
      while (!r.done) {
        r = steps.next();
      }
      this.render(r.value);
      performance.measure('reactant-lab: graph drawn', { start, end: performance.now() });
      return;
    }
    const bar = el('progress', 'rl-graph-bar-progress');
    bar.max = count;
    bar.value = 0;
    const label = el('span', 'rl-note', ' laying out…');
    this.progress.hidden = false;
    this.progress.replaceChildren(bar, label);
    const run = async (): Promise<void> => {
      let last = performance.now();
      let r = steps.next();
      while (!r.done) {
        if (performance.now() - last > 30) {
          bar.value = Math.min(count, r.value);
          label.textContent = ` laying out… ${Math.round((100 * r.value) / count)}%`;
          await new Promise(resolve => setTimeout(resolve, 0));
          if (token !== this.token) {
            return;
          }
          last = performance.now();
        }
        r = steps.next();
      }
      bar.value = count;
      label.textContent = ' drawing…';
      await new Promise(resolve => setTimeout(resolve, 0));
      if (token !== this.token) {
        return;
      }
      this.render(r.value);
      this.progress.hidden = true;
      performance.measure('reactant-lab: graph drawn', { start, end: performance.now() });
    };
    void run();
  }

  private updateCaption(): void {
    const ix = this.ix;
    if (!ix) {
      return;
    }
    const same = this.graph?.stage !== this.stageIndex ? `Same structure as stage ${this.graph?.stage}. ` : '';
    const sl = this.slice;
    const what = sl ? `the ${sl.dir} of ${this.nameOf(sl.of)} (${sl.set.size} nodes)` : '';
    const sliceNote = this.opts.only && sl ? ` Showing only ${what}.` : sl ? ` Highlighted: ${what}.` : '';
    this.caption.textContent =
      `${this.diff.caption(this.union)}${same}${ix.model.ops.toLocaleString('en-US')} ops · ${this.count.toLocaleString('en-US')} boxes drawn` +
      `${this.opts.fold ? ' (constants folded)' : ''}.${sliceNote}`;
  }

  private clearDrawing(): void {
    this.drawnFor = { ix: null, opts: null };
    this.svgBox.replaceChildren();
    this.svg = null;
    this.drawn = null;
    this.boxOf.clear();
  }

  private render(lay: Layout): void {
    const ix = this.ix as GraphIndex;
    this.drawn = lay;
    this.drawnFor = { ix, opts: this.opts };
    this.boxOf = new Map();
    const svg = svgEl('svg', 'rl-gsvg');
    svg.setAttribute('viewBox', `0 0 ${Math.ceil(lay.width)} ${Math.ceil(lay.height)}`);
    svg.setAttribute('role', 'group');
    svg.setAttribute('aria-label', `dataflow graph of stage ${this.graph?.stage ?? this.stageIndex}`);
    const marker = `rl-arrow-${++markerIds}`;
    const defs = svgEl('defs');
    const m = svgEl('marker');
    for (const [k, v] of Object.entries({ id: marker, viewBox: '0 0 8 8', refX: '8', refY: '4', markerWidth: '7', markerHeight: '7', orient: 'auto' })) {
      m.setAttribute(k, v);
    }
    const tip = svgEl('path', 'rl-garrow');
    tip.setAttribute('d', 'M0 0L8 4L0 8z');
    m.appendChild(tip);
    defs.appendChild(m);
    const frames = svgEl('g', 'rl-gframes');
    const edges = svgEl('g', 'rl-gedges');
    const nodes = svgEl('g', 'rl-gnodes');
    for (const s of lay.segs) {
      const p = svgEl('path', 'rl-ge');
      p.setAttribute('d', segPath(s.pts));
      p.dataset.s = String(s.src);
      p.dataset.d = String(s.dst);
      const change = this.union ? edgeStatus(this.union, s.src, s.dst) : 'same';
      if (change !== 'same') {
        p.classList.add(`d-${change}`);
      }
      if (s.arrow) {
        p.setAttribute('marker-end', `url(#${marker})`);
      }
      edges.appendChild(p);
    }
    for (const b of lay.boxes) {
      // an open region op's box goes under the edges (outer boxes before inner ones)
      const g = this.box(ix, b);
      (b.kind === 'region' ? frames : nodes).appendChild(g);
    }
    svg.append(defs, frames, edges, nodes);
    this.svg = svg;
    this.svgBox.replaceChildren(svg);
    this.fit();
    this.paintSlice();
    this.paintHits();
    if (this.selected >= 0) {
      this.mark(this.selected);
    }
  }

  private box(ix: GraphIndex, b: LBox): SVGGElement {
    const g = svgEl('g', `rl-gn k-${b.kind}`);
    g.setAttribute('transform', `translate(${Math.round(b.x * 10) / 10} ${Math.round(b.y * 10) / 10})`);
    g.dataset.i = String(b.i);
    const node = ix.nodes[b.i];
    if (this.union && b.kind !== 'entry') {
      g.classList.add(`d-${this.union.status[b.i]}`);
    }
    for (const mark of node?.marks ?? []) {
      g.classList.add(`m-${mark}`);
    }
    // an entry box ("block args") stands for its region op's block arguments, not for the op
    const entry = b.kind === 'entry';
    const { short, full } = entry ? { short: [], full: [] } : ix.shardLines(b.i);
    const colour = node?.sharding && !entry ? ix.shardColour.get(node.sharding) : undefined;
    if (colour !== undefined) {
      g.classList.add(`rl-sh-${colour % SHARD_COLOURS.length}`);
    }
    if (!entry && ix.collective(b.i)) {
      g.classList.add('m-collective');
    }
    if (!entry) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', [...b.lines.slice(0, b.lines.length - short.length), ...full].join(' · '));
      if (!this.boxOf.has(b.i)) {
        this.boxOf.set(b.i, g);
      }
    }
    const rect = svgEl('rect', 'rl-gbox');
    rect.setAttribute('width', String(Math.round(b.w)));
    rect.setAttribute('height', String(Math.round(b.h)));
    rect.setAttribute('rx', b.kind === 'arg' || b.kind === 'result' || b.kind === 'entry' ? '7' : '2');
    g.appendChild(rect);
    b.lines.forEach((line, k) => {
      const t = svgEl('text', k === 0 ? 'rl-gt rl-gt0' : 'rl-gt');
      t.setAttribute('x', String(PAD_X));
      t.setAttribute('y', String(4 + LINE_H * (k + 1) - 3));
      t.textContent = line;
      if (k === 0 && (b.kind === 'region' || b.kind === 'collapsed')) {
        t.classList.add('rl-gtoggle');
      }
      if (k >= b.lines.length - short.length && line.startsWith(COLLECTIVE)) {
        t.classList.add('rl-gt-coll');
      }
      g.appendChild(t);
    });
    for (const f of b.frames ?? []) {
      // a region's frame, over its op's box (coordinates relative to the box)
      const r = svgEl('rect', 'rl-gframe');
      r.setAttribute('x', String(Math.round(f.x - b.x)));
      r.setAttribute('y', String(Math.round(f.y - b.y)));
      r.setAttribute('width', String(Math.round(f.w)));
      r.setAttribute('height', String(Math.round(f.h)));
      const t = svgEl('text', 'rl-gframe-label');
      t.setAttribute('x', String(Math.round(f.x - b.x + 5)));
      t.setAttribute('y', String(Math.round(f.y - b.y + LINE_H - 3)));
      t.textContent = f.label;
      g.append(r, t);
    }
    const title = svgEl('title');
    title.textContent = [b.lines[0], node?.src ?? '', ...full].filter(Boolean).join('\n');
    g.appendChild(title);
    return g;
  }

  private zoom(factor: number): void {
    this.setScale(Math.min(3, Math.max(0.1, this.scale * factor)));
  }

  private fit(): void {
    if (this.drawn) {
      this.setScale(fitScale(this.drawn.width, (this.svgBox.clientWidth || 800) - 4));
    } else {
      const img = this.legacy.stage.querySelector('img');
      if (img) {
        this.legacy.fit(img.naturalWidth);
      }
    }
  }

  private setScale(scale: number): void {
    this.scale = scale;
    if (this.svg && this.drawn) {
      this.svg.setAttribute('width', String(Math.ceil(this.drawn.width * scale)));
      this.svg.setAttribute('height', String(Math.ceil(this.drawn.height * scale)));
      this.svg.dataset.scale = scale.toFixed(3);
    }
  }

  private nameOf(i: number): string {
    const n = this.ix?.nodes[i];
    if (!n) {
      return '';
    }
    return n.kind === 'op' ? `${n.ssa ? `${n.ssa.split(',')[0]} = ` : ''}${n.op ?? ''}` : (n.name ?? n.id);
  }

  /** Select node `i`: its panel, its box marked; a click on a region op's ▸ / ▾ opens or closes it. */
  private select(i: number, toggle = false): void {
    const ix = this.ix;
    if (!ix || !ix.nodes[i]) {
      return;
    }
    if (toggle && ix.isRegion(i)) {
      this.toggleRegion(i);
    }
    this.selected = i;
    this.mark(i);
    this.showPanel(i);
  }

  private toggleRegion(i: number): void {
    const expanded = new Set(this.opts.expanded);
    if (expanded.has(i)) {
      expanded.delete(i);
    } else {
      expanded.add(i);
      for (const a of this.ix?.ancestors(i) ?? []) {
        expanded.add(a);
      }
    }
    this.setOptions({ ...this.opts, expanded });
  }

  private mark(i: number): void {
    this.svg?.querySelectorAll('.rl-gn.sel').forEach(n => n.classList.remove('sel'));
    this.boxOf.get(i)?.classList.add('sel');
  }

  private showPanel(i: number): void {
    const ix = this.ix as GraphIndex;
    const n = ix.nodes[i];
    const p = this.panel;
    p.hidden = false;
    p.replaceChildren();
    const head = el('div', 'rl-gp-head');
    head.append(el('span', 'rl-gp-title', this.nameOf(i)), button('×', () => this.closePanel(), 'rl-gp-close'));
    p.appendChild(head);
    if (n.ssa) {
      p.appendChild(row('SSA', el('code', 'rl-gp-ssa', n.ssa)));
    }
    if (n.kind === 'op') {
      p.appendChild(row('op', el('code', 'rl-gp-op', n.op ?? '')));
    } else {
      p.appendChild(row(n.kind === 'arg' ? 'argument' : 'result', el('code', 'rl-gp-name', n.name ?? '')));
      if (n.path && n.path !== n.name) {
        p.appendChild(row('path', el('code', 'rl-gp-path', n.path)));
      }
    }
    if (n.attrs) {
      p.appendChild(row('attributes', el('code', 'rl-gp-attrs', n.attrs)));
    }
    if (n.precision) {
      p.appendChild(row('precision', el('span', 'rl-gp-precision', n.precision)));
    }
    if (n.type) {
      p.appendChild(row('types', el('code', 'rl-gp-type', n.type)));
    }
    if (n.title) {
      p.appendChild(row('statement', n.title));
    }
    const carried = carriedText(n);
    if (carried) {
      p.appendChild(row(n.op === 'stablehlo.while' ? 'carries' : 'results', el('code', 'rl-gp-carried', carried)));
    }
    if (n.marks?.length) {
      p.appendChild(row('marks', n.marks.join(', ')));
    }
    if (n.sharding) {
      p.appendChild(row('sharding', el('code', 'rl-gp-sharding', n.sharding)));
    }
    if (n.collectives?.length) {
      const list = el('span', 'rl-gp-colls');
      list.append(...n.collectives.map(c => el('code', 'rl-gp-coll', c)));
      p.appendChild(row('collectives', list));
    }
    p.appendChild(row('source', el('code', 'rl-gp-src', n.src ?? 'not known (no file location)')));
    if (n.line !== undefined && this.onReveal) {
      const line = n.line;
      const reveal = this.onReveal;
      // a removed box is a line of the compared stage's text
      const removed = this.union?.status[i] === 'removed' && this.compare !== null;
      const stage = removed ? (this.compare as number) : this.stageIndex;
      p.appendChild(
        row(
          'text',
          button(removed ? `IR line ${line} of stage ${stage}` : `IR line ${line}`, () => reveal({ tab: 'ir', stage, line }), 'rl-gp-ir'),
          ...(removed ? [] : [button('in the diff', () => reveal({ tab: 'diff', stage, line }), 'rl-gp-diff')])
        )
      );
    }
    if (this.union) {
      p.appendChild(this.diff.panelRow(this.union, i, this.stageIndex, this.compare));
    }
    const kernel = this.kernelOf(i);
    if (this.onCode && kernel) {
      const code = this.onCode;
      const ir = button('LLVM IR', () => code(kernel.name, 'llvm_ir'), 'rl-gp-llvm');
      const asm = button('assembly', () => code(kernel.name, 'assembly'), 'rl-gp-asm');
      ir.title = `the LLVM IR XLA:CPU generated for kernel ${kernel.name}`;
      asm.title = `the machine code XLA:CPU compiled kernel ${kernel.name} to`;
      const where = kernel.inside ? `part of ${kernel.name}: ` : '';
      p.appendChild(row('kernel', ...(where ? [el('code', 'rl-gp-kernel', where)] : []), ir, asm));
    }
    const links = (list: number[]): HTMLElement => {
      const span = el('span', 'rl-gp-links');
      const shown = [...new Set(list)].slice(0, 24);
      for (const s of shown) {
        const folded = this.opts.fold && ix.foldable[s];
        span.append(button(folded ? `${this.nameOf(s)} (${ix.foldText[s]})` : this.nameOf(s), () => this.goTo(s), 'rl-gp-link'));
      }
      if (list.length > shown.length) {
        span.append(el('span', 'rl-note', ` +${list.length - shown.length} more`));
      }
      return span;
    };
    if (n.in.length) {
      p.appendChild(row('inputs', links(n.in)));
    }
    if (ix.users[i].length) {
      p.appendChild(row('users', links(ix.users[i])));
    }
    const sl = el('div', 'rl-gp-slice');
    sl.append(
      el('span', 'rl-gp-key', 'slice'),
      button('producers', () => this.setSlice(i, 'producers'), 'rl-slice-producers'),
      button('consumers', () => this.setSlice(i, 'consumers'), 'rl-slice-consumers'),
      button('clear', () => this.setSlice(-1, 'producers'), 'rl-slice-clear'),
      button('draw only the slice', () => this.drawOnlySlice(i), 'rl-slice-only')
    );
    p.appendChild(sl);
    if (ix.isRegion(i)) {
      p.appendChild(
        row('region', button(this.opts.expanded.has(i) ? 'close' : 'open', () => this.select(i, true), 'rl-gp-toggle'), ` ${ix.inside[i]} ops inside`)
      );
    }
  }

  /** The kernel XLA:CPU emitted for node `i` of the optimized HLO's graph, or for the op it
   * is inside (a fusion's instruction, a small loop compiled whole); null elsewhere. */
  private kernelOf(i: number): { name: string; inside: boolean } | null {
    const ix = this.ix;
    if (!ix || !this.kernels.size || !this.graph?.stages.includes((this.payload?.stages?.length ?? 0) - 1)) {
      return null; // the graph of the optimized HLO only
    }
    for (let at: number | undefined = i; at !== undefined; at = ix.nodes[at]?.parent) {
      const n = ix.nodes[at];
      const name = n?.kind === 'op' ? kernelNamed(n.ssa, this.kernels) : null;
      if (name) {
        return { name, inside: at !== i };
      }
    }
    return null;
  }

  private closePanel(): void {
    this.panel.hidden = true;
    this.selected = -1;
    this.mark(-1);
  }

  /** Show node `i`: open the regions around it, scroll to it (or to its user, when folded) and
   * select it. */
  private goTo(i: number): void {
    const ix = this.ix;
    if (!ix) {
      return;
    }
    const closed = ix.ancestors(i).filter(a => !this.opts.expanded.has(a));
    const hidden = this.opts.only && !this.opts.only.has(i);
    if (closed.length || hidden) {
      const expanded = new Set(this.opts.expanded);
      closed.forEach(a => expanded.add(a));
      this.setOptions({ ...this.opts, expanded, only: hidden ? null : this.opts.only });
    }
    const shown = ix.shownAs(i, this.opts);
    this.scrollTo(shown);
    this.selected = i;
    this.mark(shown);
    this.showPanel(i);
  }

  private scrollTo(i: number): void {
    const b = this.drawn?.boxes.find(x => x.i === i && x.kind !== 'entry');
    if (!b) {
      return;
    }
    const s = this.scale;
    this.svgBox.scrollLeft = Math.max(0, (b.x + b.w / 2) * s - this.svgBox.clientWidth / 2);
    this.svgBox.scrollTop = Math.max(0, (b.y + b.h / 2) * s - this.svgBox.clientHeight / 2);
  }

  private setSlice(i: number, dir: 'producers' | 'consumers'): void {
    const ix = this.ix;
    this.slice = ix && i >= 0 ? { of: i, dir, set: dir === 'producers' ? ix.producers(i) : ix.consumers(i) } : null;
    this.paintSlice();
  }

  private drawOnlySlice(i: number): void {
    const ix = this.ix;
    if (!ix) {
      return;
    }
    if (!this.slice || this.slice.of !== i) {
      this.setSlice(i, 'producers');
    }
    const set = this.slice?.set ?? new Set([i]);
    this.setOptions({ ...this.opts, only: set });
    this.scrollTo(ix.shownAs(i, this.opts));
  }

  private paintSlice(): void {
    this.updateCaption();
    const svg = this.svg;
    if (!svg) {
      return;
    }
    const set = this.slice?.set;
    svg.classList.toggle('rl-sliced', !!set);
    const ix = this.ix as GraphIndex;
    const shown = new Set<number>();
    if (set) {
      for (const i of set) {
        shown.add(ix.shownAs(i, this.opts));
      }
    }
    svg.querySelectorAll<SVGGElement>('.rl-gn').forEach(g => g.classList.toggle('in-slice', shown.has(Number(g.dataset.i))));
    svg.querySelectorAll<SVGPathElement>('.rl-ge').forEach(p => {
      const s = Number(p.dataset.s);
      const d = Number(p.dataset.d);
      p.classList.toggle('in-slice', shown.has(s) && (d < 0 || shown.has(d)));
    });
  }

  private search(): void {
    const q = this.searchBox.value;
    this.hits = this.ix ? this.ix.search(q) : [];
    this.hit = -1;
    this.paintHits();
    this.searchCount.textContent = q.trim() ? `${this.hits.length} found` : '';
    if (this.hits.length) {
      this.nextHit(1);
    }
  }

  private paintHits(): void {
    const ix = this.ix;
    const shown = new Set(ix ? this.hits.map(i => ix.shownAs(i, this.opts)) : []);
    this.svg?.querySelectorAll<SVGGElement>('.rl-gn').forEach(g => g.classList.toggle('hit', shown.has(Number(g.dataset.i))));
  }

  private nextHit(step: number): void {
    if (!this.hits.length) {
      return;
    }
    this.hit = (this.hit + step + this.hits.length) % this.hits.length;
    this.goTo(this.hits[this.hit]);
    this.searchCount.textContent = `${this.hit + 1} of ${this.hits.length}`;
  }

  /** The theme's colours, as the explorer's stylesheet resolves them here. */
  private palette(): Palette {
    const css = this.node.isConnected ? getComputedStyle(this.node) : null;
    const v = (name: string, fallback: string) => css?.getPropertyValue(name).trim() || fallback;
    return {
      bg: v('--rl-bg', '#fff'),
      fg: v('--rl-fg', '#1f2328'),
      mute: v('--rl-mute', '#575757'),
      line: v('--rl-line', '#d0d7de'),
      accent: v('--rl-accent', '#0969da'),
      green: v('--rl-green', '#17622b'),
      orange: v('--rl-orange', '#9c3a00')
    };
  }

  /** The summary picture again, in the theme's colours now (the theme changed). */
  private retheme(): void {
    const shown = this.shownSvg;
    if (shown && !this.legacy.node.hidden && this.node.isConnected) {
      this.setImage(shown.svg, shown.alt, shown.hotspots);
    }
  }

  private setImage(svg: string | null, alt: string, hotspots: Hotspot[]): void {
    if (!svg) {
      this.shownSvg = null;
      this.legacy.stage.replaceChildren();
      return;
    }
    this.shownSvg = { svg, alt, hotspots };
    const img = el('img', 'rl-graph-img');
    img.alt = alt;
    img.draggable = false;
    img.addEventListener('load', () => this.legacy.fit(img.naturalWidth));
    img.src = svgDataUri(themedSvg(svg, this.palette()));
    const layer = el('div', 'rl-hotspots');
    for (const h of hotspots) {
      const spot = el('button', 'rl-hotspot');
      spot.type = 'button';
      spot.title = `draw the slice of ${h.label}`;
      spot.setAttribute('aria-label', `draw the slice of ${h.label}`);
      const [l, t, w, ht] = h.box;
      Object.assign(spot.style, { left: `${l}%`, top: `${t}%`, width: `${w}%`, height: `${ht}%` });
      spot.addEventListener('click', () => this.drawSliceOf(h.result));
      layer.appendChild(spot);
    }
    this.legacy.stage.replaceChildren(img, layer);
  }
}
