// A graph diff between two stages, drawn as one graph: the selected stage's model with the
// compared stage's removed nodes merged in (their edges too), so that every box the two share
// is drawn once, in one layout. Which nodes match is the payload's (graph_diffs, computed in
// Python); here only the union and what each box and edge is.

import type { ExplorerPayload, GraphDiffEntry, GraphEntry, GraphModel, GraphNode } from './types';

export type DiffStatus = 'same' | 'added' | 'removed' | 'changed';

export interface GraphUnion {
  /** The union as a graph model (the layout's input). */
  model: GraphModel;
  /** The compared stage's model (what `old` indexes). */
  before: GraphModel;
  /** Per union node: what it is between the two stages. */
  status: DiffStatus[];
  /** Per union node: its node in the compared (old) model, -1 when it has none (added). */
  old: number[];
  /** Per union node: its node in the selected (new) model, -1 when it has none (removed). */
  now: number[];
  /** Edges (src * size + dst, union indices) that only the compared stage has. */
  removedEdges: Set<number>;
  /** Edges that only the selected stage has. */
  addedEdges: Set<number>;
  counts: { added: number; removed: number; changed: number };
}

/** What a live explorer got from the kernel beyond the payload: models of graphs the payload
 * holds only as summaries, and graph diffs it did not keep (their stages a GraphEntry's). */
export interface FetchedGraphs {
  model(g: GraphEntry): GraphModel | undefined;
  diffs: readonly GraphDiffEntry[];
}

/** The graph diff between the graphs drawn for stages `base` (compared) and `stage` (selected)
 * in `payload` (and what was `fetched`): the entry and whether it reads backwards (its `after`
 * is the compared stage). null when either stage has no graph model, both have the same graph,
 * or the pair was not kept. */
export function findGraphDiff(
  payload: ExplorerPayload,
  base: number,
  stage: number,
  fetched?: FetchedGraphs
): { entry: GraphDiffEntry; old: GraphModel; now: GraphModel; reversed: boolean } | null {
  const graphOf = (i: number) => payload.graphs.find(g => g.stages.includes(i));
  const [gOld, gNow] = [graphOf(base), graphOf(stage)];
  const modelOf = (g: GraphEntry | undefined) => (g ? (g.model ?? fetched?.model(g)) : undefined);
  const [old, now] = [modelOf(gOld), modelOf(gNow)];
  if (!gOld || !gNow || !old || !now || gOld === gNow) {
    return null;
  }
  for (const entry of [...(payload.graph_diffs ?? []), ...(fetched?.diffs ?? [])]) {
    if (entry.before === gOld.stage && entry.after === gNow.stage) {
      return { entry, old, now, reversed: false };
    }
    if (entry.before === gNow.stage && entry.after === gOld.stage) {
      return { entry, old, now, reversed: true };
    }
  }
  return null;
}

/** Per node of `now`, its match in `old` (-1: none), and the matched nodes of `now` that
 * changed, for a diff entry read forwards (`old` is its before) or backwards. */
export function matchNowToOld(
  entry: GraphDiffEntry,
  oldSize: number,
  nowSize: number,
  reversed: boolean
): { toOld: number[]; changed: Set<number> } {
  if (!reversed) {
    return { toOld: entry.match.slice(0, nowSize), changed: new Set(entry.changed) };
  }
  const toOld = new Array<number>(nowSize).fill(-1);
  const changed = new Set<number>();
  const wasChanged = new Set(entry.changed);
  entry.match.forEach((a, b) => {
    if (a >= 0 && a < nowSize && b < oldSize) {
      toOld[a] = b;
      if (wasChanged.has(b)) {
        changed.add(a);
      }
    }
  });
  return { toOld, changed };
}

/** The union of `old` (the compared stage's model) and `now` (the selected stage's), where
 * `toOld[i]` is node i of `now`'s match in `old` (-1: added) and `changed` the matched nodes of
 * `now` that differ. Nodes come in an order where every node follows its operands and its
 * region op (the layout's ranks need it): `now`'s order, each removed node after the match of
 * the old node before it. */
export function graphUnion(old: GraphModel, now: GraphModel, toOld: readonly number[], changed: ReadonlySet<number>): GraphUnion {
  const nNow = now.nodes.length;
  const matchedOld = new Array<number>(old.nodes.length).fill(-1);
  toOld.forEach((a, b) => {
    if (a >= 0 && a < old.nodes.length) {
      matchedOld[a] = b;
    }
  });
  // provisional ids: now's nodes 0..nNow-1, removed old nodes after them
  const removed = old.nodes.map((_, a) => a).filter(a => matchedOld[a] < 0);
  const idOfOld = matchedOld.slice();
  removed.forEach((a, k) => (idOfOld[a] = nNow + k));
  const total = nNow + removed.length;
  const nodeOf = (id: number): GraphNode => (id < nNow ? now.nodes[id] : old.nodes[removed[id - nNow]]);
  const ins: number[][] = [];
  const parents: (number | undefined)[] = [];
  const key = (s: number, d: number): number => s * total + d;
  const nowEdges = new Set<number>();
  const oldEdges = new Set<number>();
  for (let b = 0; b < nNow; b++) {
    ins.push([...now.nodes[b].in]);
    parents.push(now.nodes[b].parent);
    now.nodes[b].in.forEach(s => nowEdges.add(key(s, b)));
  }
  for (const a of removed) {
    const n = old.nodes[a];
    ins.push(n.in.map(s => idOfOld[s]));
    parents.push(n.parent === undefined ? undefined : idOfOld[n.parent]);
  }
  old.nodes.forEach((n, a) => {
    const d = idOfOld[a];
    for (const s of n.in) {
      oldEdges.add(key(idOfOld[s], d));
      // a removed operand of a node both stages have: drawn as the edge it was
      if (d < nNow && idOfOld[s] >= nNow && !ins[d].includes(idOfOld[s])) {
        ins[d].push(idOfOld[s]);
      }
    }
  });
  // priority: now's position; a removed node just after the match of the old node before it
  const prio = new Float64Array(total);
  for (let b = 0; b < nNow; b++) {
    prio[b] = b;
  }
  let last = -1;
  old.nodes.forEach((_, a) => {
    if (matchedOld[a] >= 0) {
      last = matchedOld[a];
    } else {
      prio[idOfOld[a]] = last + 0.5 + a / (old.nodes.length + 1) / 4;
    }
  });
  const order = topoOrder(total, ins, parents, prio);
  const at = new Array<number>(total);
  order.forEach((id, k) => (at[id] = k));
  const status: DiffStatus[] = [];
  const oldIx: number[] = [];
  const nowIx: number[] = [];
  const nodes: GraphNode[] = order.map(id => {
    const n = nodeOf(id);
    const out: GraphNode = { ...n, in: ins[id].map(s => at[s]) };
    const p = parents[id];
    if (p === undefined) {
      delete out.parent;
    } else {
      out.parent = at[p];
    }
    status.push(id >= nNow ? 'removed' : toOld[id] < 0 ? 'added' : changed.has(id) ? 'changed' : 'same');
    oldIx.push(id >= nNow ? removed[id - nNow] : toOld[id]);
    nowIx.push(id >= nNow ? -1 : id);
    return out;
  });
  const relabel = (edges: Set<number>): Set<number> =>
    new Set([...edges].map(e => at[Math.floor(e / total)] * total + at[e % total]));
  const nowSet = relabel(nowEdges);
  const oldSet = relabel(oldEdges);
  const removedEdges = new Set([...oldSet].filter(e => !nowSet.has(e)));
  const addedEdges = new Set([...nowSet].filter(e => !oldSet.has(e)));
  return {
    model: { ...now, nodes },
    before: old,
    status,
    old: oldIx,
    now: nowIx,
    removedEdges,
    addedEdges,
    counts: {
      added: status.filter(s => s === 'added').length,
      removed: status.filter(s => s === 'removed').length,
      changed: status.filter(s => s === 'changed').length
    }
  };
}

/** Node ids in an order where each follows its operands and its parent, lowest priority first
 * among those ready; nodes on a cycle (a matching that crosses itself) last, by priority. */
function topoOrder(total: number, ins: number[][], parents: (number | undefined)[], prio: Float64Array): number[] {
  const waiting = new Int32Array(total);
  const after: number[][] = Array.from({ length: total }, () => []);
  for (let d = 0; d < total; d++) {
    const deps = new Set(ins[d].filter(s => s !== d && s >= 0 && s < total));
    const p = parents[d];
    if (p !== undefined && p !== d) {
      deps.add(p);
    }
    for (const s of deps) {
      after[s].push(d);
    }
    waiting[d] = deps.size;
  }
  const heap = new MinHeap(prio);
  for (let d = 0; d < total; d++) {
    if (!waiting[d]) {
      heap.push(d);
    }
  }
  const out: number[] = [];
  const done = new Uint8Array(total);
  while (out.length < total) {
    let v = heap.pop();
    if (v === undefined) {
      // a cycle: take the lowest-priority node left
      let best = -1;
      for (let d = 0; d < total; d++) {
        if (!done[d] && (best < 0 || prio[d] < prio[best])) {
          best = d;
        }
      }
      v = best;
    }
    if (done[v]) {
      continue;
    }
    done[v] = 1;
    out.push(v);
    for (const d of after[v]) {
      if (--waiting[d] === 0 && !done[d]) {
        heap.push(d);
      }
    }
  }
  return out;
}

class MinHeap {
  private readonly items: number[] = [];
  constructor(private readonly prio: Float64Array) {}

  push(v: number): void {
    const a = this.items;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.prio[a[p]] <= this.prio[a[i]]) {
        break;
      }
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }

  pop(): number | undefined {
    const a = this.items;
    if (!a.length) {
      return undefined;
    }
    const top = a[0];
    const end = a.pop() as number;
    if (a.length) {
      a[0] = end;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.prio[a[l]] < this.prio[a[m]]) {
          m = l;
        }
        if (r < a.length && this.prio[a[r]] < this.prio[a[m]]) {
          m = r;
        }
        if (m === i) {
          break;
        }
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}

/** What a drawn edge piece from union node `src` to `dst` is (-1: a piece of a bus shared by
 * several users, which is what its producer is). */
export function edgeStatus(u: GraphUnion, src: number, dst: number): DiffStatus {
  if (dst < 0) {
    const s = u.status[src];
    return s === 'added' || s === 'removed' ? s : 'same';
  }
  const k = src * u.status.length + dst;
  return u.removedEdges.has(k) ? 'removed' : u.addedEdges.has(k) ? 'added' : 'same';
}
