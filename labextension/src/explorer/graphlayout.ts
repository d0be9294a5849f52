// The interactive graph's model and layout, without the DOM: which nodes are drawn (constants
// folded into their users, regions collapsed or expanded, a slice only), slices (producers /
// consumers), search, and a layered layout (ranks, one edge "bus" per long-lived value, barycentre
// ordering, balanced x positions) with expanded regions laid out inside their op's box.

import { carriedText, splitTypes } from './names';
import type { GraphModel, GraphNode } from './types';

export const CHAR_W = 6.6;
export const LINE_H = 14;
const PAD_X = 7;
const PAD_Y = 4;
const MAX_CHARS = 36;
const RANK_GAP = 26;
const NODE_GAP = 14;
const BUS_GAP = 5;
const REGION_GAP = 10;
const MARGIN = 8;
/** Above this many drawn nodes the graph waits for "draw anyway". */
export const DEFAULT_CAP = 2500;
/** Regions with at most this many ops inside open expanded (when the graph is small enough). */
const EXPAND_OPS = 60;

const CONSTANTS = new Set(['stablehlo.constant', 'arith.constant', 'mhlo.constant', 'func.constant']);
const CONST_CHAIN = new Set([
  'stablehlo.broadcast_in_dim',
  'stablehlo.broadcast',
  'stablehlo.reshape',
  'stablehlo.convert',
  'mhlo.broadcast_in_dim'
]);

/** What to draw. */
export interface ViewOptions {
  /** Constants (and broadcasts / reshapes / converts of constants) drawn inside their users. */
  fold: boolean;
  /** Region ops drawn open (their regions laid out inside their box). */
  expanded: ReadonlySet<number>;
  /** Draw only these nodes (a slice); null: all. */
  only?: ReadonlySet<number> | null;
}

export type BoxKind = 'arg' | 'op' | 'result' | 'entry' | 'region' | 'collapsed' | 'return';

/** A drawn box: `i` is its model node (a region's "block args" box: the region op). */
export interface LBox {
  i: number;
  kind: BoxKind;
  x: number;
  y: number;
  w: number;
  h: number;
  lines: string[];
  /** An open region op's region frames (label, box). */
  frames?: { label: string; x: number; y: number; w: number; h: number }[];
}

/** An edge piece between two drawn points: `src` the value's producer, `dst` its user (-1 for a
 * piece of a bus shared by several users). */
export interface LSeg {
  src: number;
  dst: number;
  pts: number[];
  arrow: boolean;
}

export interface Layout {
  width: number;
  height: number;
  boxes: LBox[];
  segs: LSeg[];
}

export function shortOp(name: string | undefined): string {
  const n = name ?? '';
  return n.startsWith('stablehlo.') ? n.slice(10) : n.startsWith('func.call ') ? n.slice(5) : n;
}

const TENSOR = /^tensor<((?:[\d?]+x)*)([^>]+)>$/;

/** `tensor<126x126xf64>` -> `f64[126,126]` (each of a list of types). */
export function shortType(type: string | undefined): string {
  return splitTypes(type)
    .map(t => {
      const m = TENSOR.exec(t);
      return m ? `${m[2]}[${m[1].split('x').filter(Boolean).join(',')}]` : t;
    })
    .join(', ');
}

export function clip(text: string, max = MAX_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Starts the label line of an op's collectives. */
export const COLLECTIVE = '⇄';

/** Whether a sharding (`[{data}, {}]; [{}]`) splits no dimension over a mesh axis. */
export function replicated(sharding: string): boolean {
  return [...sharding.matchAll(/\{([^}]*)\}/g)].every(m => !/[^\s,?]/.test(m[1]));
}

/** Collective lines (`all-reduce f32[16,16] (1.0 KiB), ...`) in short: `all-reduce ×2, all-gather`. */
function collectiveSummary(lines: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const line of lines) {
    const op = line.split(/\s/, 1)[0];
    counts.set(op, (counts.get(op) ?? 0) + 1);
  }
  return [...counts].map(([op, k]) => (k > 1 ? `${op} ×${k}` : op)).join(', ');
}

/** A constant's value as drawn in its users: `dense<2.500000e-01>` -> `0.25`. */
export function constValue(attrs: string | undefined): string {
  const a = (attrs ?? '').trim();
  const m = /^dense<([\s\S]*)>$/.exec(a);
  const v = m ? m[1].trim() : a;
  if (/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(v)) {
    return String(Number(v));
  }
  return clip(v, 14);
}

/** The model with what every view needs: users, regions' members, foldable constants. */
export class GraphIndex {
  readonly nodes: GraphNode[];
  readonly users: number[][];
  /** Per region op, its regions' members (direct children). */
  readonly children = new Map<number, number[][]>();
  readonly top: number[] = [];
  readonly foldable: boolean[];
  readonly foldText: string[];
  /** Per region op, the number of ops inside it (all depths). */
  readonly inside: number[];
  /** Each distinct sharding that splits a dimension -> its colour (by first appearance). */
  readonly shardColour = new Map<string, number>();

  constructor(readonly model: GraphModel) {
    const nodes = (this.nodes = model.nodes);
    const n = nodes.length;
    this.users = nodes.map(() => []);
    this.foldable = new Array<boolean>(n).fill(false);
    this.foldText = new Array<string>(n).fill('');
    this.inside = new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) {
      const node = nodes[i];
      if (node.sharding && !replicated(node.sharding) && !this.shardColour.has(node.sharding)) {
        this.shardColour.set(node.sharding, this.shardColour.size);
      }
      const seen = new Set<number>();
      for (const s of node.in) {
        if (s >= 0 && s < n && !seen.has(s)) {
          seen.add(s);
          this.users[s].push(i);
        }
      }
      if (node.parent !== undefined && node.parent < n) {
        let regs = this.children.get(node.parent);
        if (!regs) {
          regs = [];
          this.children.set(node.parent, regs);
        }
        const r = node.region ?? 0;
        while (regs.length <= r) {
          regs.push([]);
        }
        regs[r].push(i);
        for (let a: number | undefined = node.parent; a !== undefined; a = nodes[a].parent) {
          this.inside[a]++;
        }
      } else {
        this.top.push(i);
      }
    }
    for (const [p, regs] of this.children) {
      const want = nodes[p].regions?.length ?? 0;
      while (regs.length < want) {
        regs.push([]);
      }
    }
    for (let i = 0; i < n; i++) {
      const node = nodes[i];
      if (node.kind !== 'op' || this.children.has(i) || !this.users[i].length) {
        continue;
      }
      if (CONSTANTS.has(node.op ?? '') && node.in.length === 0) {
        this.foldable[i] = true;
        this.foldText[i] = constValue(node.attrs);
      } else if (CONST_CHAIN.has(node.op ?? '') && node.in.length === 1 && this.foldable[node.in[0]]) {
        this.foldable[i] = true;
        this.foldText[i] = this.foldText[node.in[0]];
      }
    }
  }

  isRegion(i: number): boolean {
    return this.children.has(i);
  }

  ancestors(i: number): number[] {
    const out: number[] = [];
    for (let a = this.nodes[i]?.parent; a !== undefined; a = this.nodes[a].parent) {
      out.push(a);
    }
    return out;
  }

  descendants(i: number, out: number[] = []): number[] {
    for (const reg of this.children.get(i) ?? []) {
      for (const c of reg) {
        out.push(c);
        this.descendants(c, out);
      }
    }
    return out;
  }

  /** The region ops open by default: all those with at most EXPAND_OPS ops inside, when the
   * whole graph is small; none past 400 nodes. */
  defaultExpanded(): Set<number> {
    const out = new Set<number>();
    if (this.nodes.length <= 400) {
      for (const p of this.children.keys()) {
        if (this.inside[p] <= EXPAND_OPS) {
          out.add(p);
        }
      }
    }
    return out;
  }

  /** What node `i` depends on (a region op: its body too), `i` included. */
  producers(i: number): Set<number> {
    return reach(i, v => (this.isRegion(v) && v !== i ? [...this.nodes[v].in, ...this.descendants(v)] : this.nodes[v].in));
  }

  /** What uses node `i`'s values, transitively (a region's terminator: the region op's results
   * too), `i` included. */
  consumers(i: number): Set<number> {
    return reach(i, v => {
      const node = this.nodes[v];
      const up = node.parent !== undefined && /(^|\.)return$/.test(node.op ?? '');
      return up ? [...this.users[v], node.parent as number] : this.users[v];
    });
  }

  /** Nodes whose op name contains `query`, or that define SSA value `query` (`%12`, `12`,
   * `%10#1` for a result of `%10:2`), or whose argument / result name or path contains it. */
  search(query: string): number[] {
    const q = query.trim().toLowerCase();
    if (!q) {
      return [];
    }
    const ssa = q.startsWith('%') ? q.replace(/#\d+$/, '') : /^\d+$/.test(q) ? `%${q}` : null;
    const out: number[] = [];
    this.nodes.forEach((n, i) => {
      const names = (n.ssa ?? '').toLowerCase().split(/,\s*/);
      const bySsa = ssa !== null && names.some(s => s === ssa || s.split(':')[0] === ssa);
      const byName =
        ssa === null &&
        [n.op, n.name, n.path].some(t => (t ?? '').toLowerCase().includes(q));
      if (bySsa || byName) {
        out.push(i);
      }
    });
    return out;
  }

  /** The drawn node standing for node `i` under `opts`: itself, or its outermost closed region
   * op; for a folded constant, its first drawn user. */
  shownAs(i: number, opts: ViewOptions): number {
    let at = i;
    const chain = this.ancestors(i).reverse();
    for (const a of chain) {
      if (!opts.expanded.has(a)) {
        at = a;
        break;
      }
    }
    if (at === i && opts.fold && this.foldable[i] && this.users[i].length) {
      return this.shownAs(this.users[i][0], opts);
    }
    return at;
  }

  /** Node `i` communicates between devices: XLA inserted collectives for it, or it is one. */
  collective(i: number): boolean {
    const n = this.nodes[i];
    return !!n.collectives?.length || !!n.marks?.includes('collective');
  }

  /** Node `i`'s sharding and collectives: its last label lines (`short`, before clipping) and
   * the same in full (`full`, for screen readers and the tooltip). */
  shardLines(i: number): { short: string[]; full: string[] } {
    const n = this.nodes[i];
    const short: string[] = [];
    const full: string[] = [];
    if (n.sharding) {
      short.push(n.sharding.replace(/\[/g, '⟨').replace(/\]/g, '⟩'));
      full.push(`sharding ${n.sharding}`);
    }
    if (this.collective(i)) {
      const lines = n.collectives ?? [];
      short.push(`${COLLECTIVE} ${lines.length ? collectiveSummary(lines) : 'collective'}`);
      full.push(...(lines.length ? lines : ['collective']).map(c => `${COLLECTIVE} ${c}`));
    }
    return { short, full };
  }

  /** Label lines of node `i` (a closed region op, or an open one's header): what it is, then its
   * sharding and collectives. */
  label(i: number, opts: ViewOptions, open = false): string[] {
    return [...this.baseLabel(i, opts, open), ...this.shardLines(i).short.map(l => clip(l))];
  }

  private baseLabel(i: number, opts: ViewOptions, open: boolean): string[] {
    const n = this.nodes[i];
    if (n.kind === 'arg') {
      return [clip(n.name ?? n.id), clip(`${n.ssa ?? ''} ${shortType(n.type)}`.trim())];
    }
    const folded = opts.fold ? n.in.filter(s => this.foldable[s]).map(s => this.foldText[s]) : [];
    if (n.kind === 'result') {
      return [clip(n.name ?? n.id), clip(n.type ?? ''), ...(folded.length ? [clip(`= ${folded.join(', ')}`)] : [])];
    }
    const op = shortOp(n.op);
    const ssa = (n.ssa ?? '').split(',')[0];
    if (this.isRegion(i)) {
      const head = `${open ? '▾' : '▸'} ${ssa ? `${ssa} = ` : ''}${op}`;
      const what = n.title ?? (n.regions ?? []).join(' / ');
      const carried = carriedText(n, shortType);
      const inside = `${this.inside[i]} ops inside`;
      return [
        clip(head),
        ...(what ? [clip(what)] : []),
        ...(carried ? [clip(`${n.op === 'stablehlo.while' ? 'carries' : '→'} ${carried}`), inside] : [clip(`${inside} · ${shortType(n.type)}`)])
      ];
    }
    if (/(^|\.)return$/.test(n.op ?? '')) {
      return [op, ...(folded.length ? [clip(folded.join(', '))] : [])];
    }
    const extra = [n.attrs ?? '', ...folded.map(v => `c=${v}`)].filter(Boolean).join(' · ');
    return [clip(ssa ? `${ssa} = ${op}` : op), ...(extra ? [clip(extra)] : []), clip(shortType(n.type))];
  }

  /** How many boxes a view draws (its cost). */
  drawnCount(opts: ViewOptions): number {
    let count = 0;
    const walk = (members: number[]): void => {
      for (const m of members) {
        if (!this.visible(m, opts)) {
          continue;
        }
        count++;
        if (this.isRegion(m) && opts.expanded.has(m)) {
          for (const reg of this.children.get(m) ?? []) {
            walk(reg);
          }
        }
      }
    };
    walk(this.top);
    return count;
  }

  visible(i: number, opts: ViewOptions): boolean {
    if (opts.fold && this.foldable[i]) {
      return false;
    }
    return !opts.only || opts.only.has(i);
  }
}

interface LNode {
  /** Model index; -1 for a dummy (bus) node; the scope for the entry box. */
  i: number;
  kind: BoxKind | 'dummy';
  w: number;
  h: number;
  lines: string[];
  preds: number[];
  succs: number[];
  rank: number;
  x: number;
  /** The bus's producer, for a dummy. */
  owner: number;
  sub?: Layout;
  frames?: LBox['frames'];
}

function boxSize(lines: string[]): [number, number] {
  const chars = Math.max(4, ...lines.map(l => l.length));
  return [Math.ceil(chars * CHAR_W + 2 * PAD_X), lines.length * LINE_H + 2 * PAD_Y];
}

/** Lay out a view of the graph; yields progress (nodes placed so far) as it goes. */
export function* layoutSteps(ix: GraphIndex, opts: ViewOptions): Generator<number, Layout, void> {
  const only = opts.only ? new Set<number>(opts.only) : null;
  if (only) {
    for (const i of opts.only ?? []) {
      for (const a of ix.ancestors(i)) {
        only.add(a);
      }
    }
  }
  const view: ViewOptions = { ...opts, only };
  const done = { n: 0 };
  return yield* layoutGroup(ix, ix.top, null, view, done);
}

/** The whole layout at once. */
export function layout(ix: GraphIndex, opts: ViewOptions): Layout {
  const steps = layoutSteps(ix, opts);
  for (;;) {
    const r = steps.next();
    if (r.done) {
      return r.value;
    }
  }
}

function* layoutGroup(
  ix: GraphIndex,
  all: number[],
  scope: number | null,
  opts: ViewOptions,
  done: { n: number }
): Generator<number, Layout, void> {
  const members = all.filter(m => ix.visible(m, opts));
  const local = new Map<number, number>();
  const g: LNode[] = [];
  for (const m of members) {
    local.set(m, g.length);
    const node = ix.nodes[m];
    const open = ix.isRegion(m) && opts.expanded.has(m);
    const lines = ix.label(m, opts, open);
    let [w, h] = boxSize(lines);
    let sub: Layout | undefined;
    let frames: LBox['frames'];
    if (open) {
      const regs = ix.children.get(m) ?? [];
      const labels = node.regions ?? [];
      const subs: Layout[] = [];
      for (const reg of regs) {
        subs.push(yield* layoutGroup(ix, reg, m, opts, done));
      }
      const head = h;
      let x = REGION_GAP;
      const inner: Layout = { width: 0, height: 0, boxes: [], segs: [] };
      frames = [];
      const top = head + LINE_H;
      let bottom = top;
      subs.forEach((s, k) => {
        frames?.push({ label: labels[k] ?? `region ${k}`, x, y: head, w: Math.max(s.width, 60), h: s.height + LINE_H });
        shift(s, x, top, inner);
        x += Math.max(s.width, 60) + REGION_GAP;
        bottom = Math.max(bottom, top + s.height);
      });
      frames.forEach(f => (f.h = bottom - f.y));
      w = Math.max(w, x);
      h = bottom + REGION_GAP;
      sub = inner;
    }
    const kind: BoxKind =
      node.kind !== 'op'
        ? node.kind
        : open
          ? 'region'
          : ix.isRegion(m)
            ? 'collapsed'
            : /(^|\.)return$/.test(node.op ?? '')
              ? 'return'
              : 'op';
    g.push({ i: m, kind, w, h, lines, preds: [], succs: [], rank: 0, x: 0, owner: -1, sub, frames });
  }
  let entry = -1;
  const edge = new Set<number>();
  const link = (a: number, b: number): void => {
    const key = a * 1_000_003 + b;
    if (a !== b && !edge.has(key)) {
      edge.add(key);
      g[a].succs.push(b);
      g[b].preds.push(a);
    }
  };
  const rep = (s: number): number => {
    for (let a: number | undefined = s; a !== undefined; a = ix.nodes[a].parent) {
      const k = local.get(a);
      if (k !== undefined) {
        return k;
      }
      if (a === scope) {
        break;
      }
    }
    return -1;
  };
  const count = g.length;
  for (let k = 0; k < count; k++) {
    const m = g[k].i;
    const users = ix.isRegion(m) ? [m, ...ix.descendants(m)] : [m];
    for (const u of users) {
      for (const s of ix.nodes[u].in) {
        if (!ix.visible(s, opts)) {
          continue;
        }
        let r = rep(s);
        if (r === -1) {
          if (scope === null) {
            continue;
          }
          if (entry === -1) {
            entry = g.length;
            const carried = ix.nodes[scope].op === 'stablehlo.while' ? carriedText(ix.nodes[scope], shortType) : '';
            const lines = carried ? ['block args', clip(carried)] : ['block args'];
            const [w, h] = boxSize(lines);
            g.push({ i: scope, kind: 'entry', w, h, lines, preds: [], succs: [], rank: 0, x: 0, owner: -1 });
          }
          r = entry;
        }
        link(r, k);
      }
    }
  }
  // ranks: longest path from the sources, then every node but an argument as late as its users allow
  const order = entry >= 0 ? [entry, ...Array.from({ length: count }, (_, k) => k)] : Array.from({ length: count }, (_, k) => k);
  for (const k of order) {
    for (const p of g[k].preds) {
      g[k].rank = Math.max(g[k].rank, g[p].rank + 1);
    }
  }
  for (let o = order.length - 1; o >= 0; o--) {
    const v = g[order[o]];
    if (v.kind === 'arg' || v.kind === 'entry' || !v.succs.length) {
      continue;
    }
    let lo = Infinity;
    for (const s of v.succs) {
      lo = Math.min(lo, g[s].rank);
    }
    v.rank = Math.max(v.rank, lo - 1);
  }
  yield (done.n += count / 4);
  // one bus (a chain of dummies) per value used more than one rank below
  for (let k = 0; k < g.length; k++) {
    const v = g[k];
    if (v.kind === 'dummy') {
      continue;
    }
    let far = v.rank + 1;
    for (const s of v.succs) {
      far = Math.max(far, g[s].rank);
    }
    if (far <= v.rank + 1) {
      continue;
    }
    const chain: number[] = [];
    let prev = k;
    for (let r = v.rank + 1; r < far; r++) {
      const d = g.length;
      g.push({ i: -1, kind: 'dummy', w: 0, h: 0, lines: [], preds: [prev], succs: [], rank: r, x: 0, owner: k });
      chain.push(d);
      prev = d;
    }
    const succs = v.succs;
    v.succs = [chain[0]];
    for (let c = 0; c + 1 < chain.length; c++) {
      g[chain[c]].succs.push(chain[c + 1]);
    }
    for (const s of succs) {
      const r = g[s].rank;
      const from = r === v.rank + 1 ? k : chain[r - v.rank - 2];
      if (from !== k) {
        g[from].succs.push(s);
      } else {
        v.succs.push(s);
      }
      const preds = g[s].preds;
      preds[preds.indexOf(k)] = from;
    }
  }
  let ranks = 0;
  for (const v of g) {
    ranks = Math.max(ranks, v.rank + 1);
  }
  const layers: number[][] = Array.from({ length: ranks }, () => []);
  for (let k = 0; k < g.length; k++) {
    layers[g[k].rank].push(k);
  }
  const pos = new Float64Array(g.length);
  const setPos = (layer: number[]): void => layer.forEach((k, p) => (pos[k] = p));
  layers.forEach(setPos);
  const sweep = (down: boolean): void => {
    const key = new Float64Array(g.length);
    for (let li = down ? 1 : ranks - 2; down ? li < ranks : li >= 0; li += down ? 1 : -1) {
      const layer = layers[li];
      for (const k of layer) {
        const nb = down ? g[k].preds : g[k].succs;
        let sum = 0;
        for (const p of nb) {
          sum += pos[p];
        }
        key[k] = nb.length ? sum / nb.length : pos[k];
      }
      layer.sort((a, b) => key[a] - key[b] || pos[a] - pos[b]);
      setPos(layer);
    }
  };
  for (let it = 0; it < 4; it++) {
    sweep(it % 2 === 0);
    yield (done.n += count / 16);
  }
  sweep(true);
  // x: each layer packed, then pulled towards its neighbours (balanced left/right placements)
  const gap = (a: LNode, b: LNode): number =>
    (a.w + b.w) / 2 + (a.kind === 'dummy' || b.kind === 'dummy' ? BUS_GAP : NODE_GAP);
  for (const layer of layers) {
    let x = 0;
    layer.forEach((k, p) => {
      x += p ? gap(g[layer[p - 1]], g[k]) : 0;
      g[k].x = x;
    });
  }
  const place = (layer: number[], want: Float64Array): void => {
    const n = layer.length;
    const l = new Float64Array(n);
    const r = new Float64Array(n);
    for (let p = 0; p < n; p++) {
      l[p] = p ? Math.max(want[p], l[p - 1] + gap(g[layer[p - 1]], g[layer[p]])) : want[p];
    }
    for (let p = n - 1; p >= 0; p--) {
      r[p] = p < n - 1 ? Math.min(want[p], r[p + 1] - gap(g[layer[p]], g[layer[p + 1]])) : want[p];
    }
    for (let p = 0; p < n; p++) {
      g[layer[p]].x = (l[p] + r[p]) / 2;
    }
  };
  const align = (down: boolean): void => {
    for (let li = down ? 1 : ranks - 2; down ? li < ranks : li >= 0; li += down ? 1 : -1) {
      const layer = layers[li];
      const want = new Float64Array(layer.length);
      layer.forEach((k, p) => {
        const nb = down ? g[k].preds : g[k].succs;
        let sum = 0;
        for (const q of nb) {
          sum += g[q].x;
        }
        want[p] = nb.length ? sum / nb.length : g[k].x;
      });
      place(layer, want);
    }
  };
  // each layer re-centred after a pass: a chain of similar steps (an unrolled loop) stays one
  // straight column instead of drifting sideways rank by rank
  const centre = (): void => {
    for (const layer of layers) {
      if (!layer.length) {
        continue;
      }
      const first = g[layer[0]];
      const last = g[layer[layer.length - 1]];
      const mid = (first.x - first.w / 2 + last.x + last.w / 2) / 2;
      for (const k of layer) {
        g[k].x -= mid;
      }
    }
  };
  centre();
  for (const down of [true, false, true]) {
    align(down);
    centre();
  }
  yield (done.n += count / 4);
  let minX = Infinity;
  let maxX = -Infinity;
  for (const v of g) {
    minX = Math.min(minX, v.x - v.w / 2);
    maxX = Math.max(maxX, v.x + v.w / 2);
  }
  if (!g.length) {
    minX = maxX = 0;
  }
  const top = new Float64Array(ranks + 1);
  const height = new Float64Array(ranks);
  for (const v of g) {
    height[v.rank] = Math.max(height[v.rank], v.h);
  }
  top[0] = MARGIN;
  for (let r = 0; r < ranks; r++) {
    top[r + 1] = top[r] + height[r] + RANK_GAP;
  }
  const out: Layout = {
    width: Math.max(maxX - minX + 2 * MARGIN, 40),
    height: Math.max(top[ranks] - RANK_GAP + MARGIN, 24),
    boxes: [],
    segs: []
  };
  const dx = MARGIN - minX;
  for (const v of g) {
    v.x += dx;
  }
  for (const v of g) {
    if (v.kind === 'dummy') {
      continue;
    }
    const box: LBox = { i: v.i, kind: v.kind, x: v.x - v.w / 2, y: top[v.rank], w: v.w, h: v.h, lines: v.lines };
    if (v.frames) {
      box.frames = v.frames.map(f => ({ ...f, x: f.x + box.x, y: f.y + box.y }));
    }
    out.boxes.push(box);
    if (v.sub) {
      shift(v.sub, box.x, box.y, out);
    }
  }
  const real = (k: number): number => (g[k].kind === 'dummy' ? g[g[k].owner].i : g[k].i);
  for (let k = 0; k < g.length; k++) {
    const a = g[k];
    const ax = a.x;
    const ay = a.kind === 'dummy' ? top[a.rank] + height[a.rank] : top[a.rank] + a.h;
    for (const s of a.succs) {
      const b = g[s];
      const by = top[b.rank];
      const pts = [ax, ay, b.x, by];
      if (b.kind === 'dummy') {
        pts.push(b.x, by + height[b.rank]);
      }
      out.segs.push({ src: real(k), dst: b.kind === 'dummy' ? -1 : b.i, pts, arrow: b.kind !== 'dummy' });
    }
  }
  done.n += count / 4;
  return out;
}

function shift(from: Layout, dx: number, dy: number, into: Layout): void {
  for (const b of from.boxes) {
    b.x += dx;
    b.y += dy;
    for (const f of b.frames ?? []) {
      f.x += dx;
      f.y += dy;
    }
    into.boxes.push(b);
  }
  for (const s of from.segs) {
    for (let p = 0; p < s.pts.length; p += 2) {
      s.pts[p] += dx;
      s.pts[p + 1] += dy;
    }
    into.segs.push(s);
  }
}

/** An SVG path through a segment's points: a curve between ranks, straight through a bus. */
export function segPath(pts: number[]): string {
  const f = (v: number): string => (Math.round(v * 10) / 10).toString();
  const [x1, y1, x2, y2] = pts;
  const my = (y1 + y2) / 2;
  let d = `M${f(x1)} ${f(y1)}C${f(x1)} ${f(my)} ${f(x2)} ${f(my)} ${f(x2)} ${f(y2)}`;
  for (let p = 4; p < pts.length; p += 2) {
    d += `L${f(pts[p])} ${f(pts[p + 1])}`;
  }
  return d;
}


/** Every node reachable from `start` through `next`, `start` included. */
function reach(start: number, next: (v: number) => Iterable<number>): Set<number> {
  const seen = new Set<number>();
  const todo = [start];
  while (todo.length) {
    const v = todo.pop() as number;
    if (!seen.has(v)) {
      seen.add(v);
      todo.push(...next(v));
    }
  }
  return seen;
}
