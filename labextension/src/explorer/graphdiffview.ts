// The graph pane's "changes from" controls: the toggle and the compared stage (the explorer's
// one, shared with the diff tab), the legend of what the colours mean, the caption's counts, and
// a selected box's change in its panel.

import { el } from './dom';
import { findGraphDiff, type DiffStatus, type FetchedGraphs, type GraphUnion } from './graphdiff';
import { shortType } from './graphlayout';
import type { ExplorerPayload, GraphEntry, GraphNode } from './types';

export type FoundDiff = NonNullable<ReturnType<typeof findGraphDiff>>;

const LEGEND: [DiffStatus, string][] = [
  ['added', 'added'],
  ['removed', 'removed'],
  ['changed', 'changed'],
  ['same', 'unchanged']
];

export class GraphDiffControls {
  readonly node: HTMLSpanElement;
  readonly legend: HTMLDivElement;
  payload: ExplorerPayload | null = null;
  /** The compared stage as the explorer's state holds it (null: the stage before). */
  base: number | null = null;
  private readonly box: HTMLInputElement;
  private readonly select: HTMLSelectElement;
  private stage = 0;
  private compare: number | null = null;
  /** Why no diff is drawn while the box is checked ('' when one is). */
  private why = '';

  constructor(onToggle: () => void, onBase?: (base: number | null) => void) {
    this.node = el('span', 'rl-gdiff-tools');
    const label = el('label', 'rl-gdiff-toggle');
    this.box = el('input');
    this.box.type = 'checkbox';
    this.box.addEventListener('change', onToggle);
    label.append(this.box, ' changes from');
    label.title = 'draw this stage and the compared one as one graph: boxes added, removed or changed between them marked';
    this.select = el('select', 'rl-gdiff-base');
    this.select.setAttribute('aria-label', 'stage the graph is compared with');
    this.select.addEventListener('change', () => {
      const base = this.select.value === 'previous' ? null : Number(this.select.value);
      this.box.checked = true;
      onBase?.(base);
    });
    this.select.hidden = !onBase;
    this.node.append(label, this.select);
    this.legend = el('div', 'rl-gdiff-legend');
    this.legend.setAttribute('aria-label', 'graph diff legend');
    this.legend.hidden = true;
  }

  get on(): boolean {
    return this.box.checked;
  }

  /** The options for `payload` with `stage` selected, compared with `compare` (`base` as the
   * state holds it; `fetched`: what a live explorer got from the kernel); returns the diff to
   * draw, or null (the stage alone). */
  sync(
    payload: ExplorerPayload,
    stage: number,
    compare: number | null,
    base: number | null,
    fetched?: FetchedGraphs
  ): FoundDiff | null {
    if (payload !== this.payload) {
      const options = [el('option', '', 'the stage before')];
      options[0].value = 'previous';
      for (const s of Array.isArray(payload.stages) ? payload.stages : []) {
        const o = el('option', '', `stage ${s.index}: ${s.name}`);
        o.value = String(s.index);
        options.push(o);
      }
      this.select.replaceChildren(...options);
    }
    this.payload = payload;
    this.stage = stage;
    this.compare = compare;
    this.base = base;
    this.select.value = base === null ? 'previous' : String(base);
    const found = this.on && compare !== null ? findGraphDiff(payload, compare, stage, fetched) : null;
    this.why = this.on && !found ? graphDiffReason(payload, stage, compare, fetched) : '';
    return found;
  }

  /** Say `why` instead (a live explorer asking the kernel, or its error). */
  explain(why: string): void {
    this.why = why;
  }

  /** The caption's opening: what is drawn against what, or why nothing is. */
  caption(union: GraphUnion | null): string {
    if (union) {
      const c = union.counts;
      return (
        `Changes from stage ${this.compare} to stage ${this.stage}, shared boxes drawn once: ` +
        `${c.added} added, ${c.removed} removed, ${c.changed} changed. `
      );
    }
    return this.why ? `${this.why} ` : '';
  }

  /** A panel row saying what box `i` of the union is between the two stages. */
  panelRow(union: GraphUnion, i: number, stage: number, compare: number | null): HTMLElement {
    const r = el('div', 'rl-gp-row rl-gp-change');
    const status = union.status[i];
    const what: Record<DiffStatus, string> = {
      same: `unchanged since stage ${compare}`,
      added: `added: in stage ${stage}, not in stage ${compare}`,
      removed: `removed: in stage ${compare}, not in stage ${stage}`,
      changed: `changed since stage ${compare}`
    };
    r.append(el('span', 'rl-gp-key', 'change'), el('span', `rl-gp-status d-${status}`, what[status]));
    const before = union.old[i] >= 0 ? union.before.nodes[union.old[i]] : undefined;
    if (status === 'changed' && before) {
      for (const line of differences(before, union.model.nodes[i])) {
        r.append(el('code', 'rl-gp-was', line));
      }
    }
    return r;
  }

  /** The legend of `union`'s colours and counts (hidden without one). */
  fillLegend(union: GraphUnion | null): void {
    this.legend.hidden = !union;
    if (!union) {
      this.legend.replaceChildren();
      return;
    }
    const counts: Record<DiffStatus, number> = { ...union.counts, same: union.status.length - union.counts.added - union.counts.removed - union.counts.changed };
    const where: Record<DiffStatus, string> = {
      added: ` (only in stage ${this.stage})`,
      removed: ` (only in stage ${this.compare})`,
      changed: '',
      same: ''
    };
    this.legend.replaceChildren(
      ...LEGEND.map(([status, word]) => {
        const key = el('span', 'rl-shard-key');
        key.append(el('span', `rl-swatch d-${status}`), `${word}${where[status]}: ${counts[status]}`);
        return key;
      })
    );
  }
}

/** Why no graph diff of stage `compare` -> `stage` is drawn from `payload` (and what was
 * `fetched`), as a saved explorer says it. */
export function graphDiffReason(
  payload: ExplorerPayload,
  stage: number,
  compare: number | null,
  fetched?: FetchedGraphs
): string {
  if (compare === null) {
    return 'Changes from: stage 0 has no stage before it; pick a stage to compare with.';
  }
  const graphOf = (i: number) => payload.graphs.find(g => g.stages.includes(i));
  const [gOld, gNow] = [graphOf(compare), graphOf(stage)];
  if (gOld && gOld === gNow) {
    return `Stage ${compare} has the same structure as stage ${stage}: no box changed.`;
  }
  const absent = [[compare, gOld], [stage, gNow]].find(([, g]) => !g) as [number, undefined] | undefined;
  if (absent) {
    return `No graph was kept for stage ${absent[0]} (at most 8 are): nothing to compare with.`;
  }
  const summary = [[compare, gOld], [stage, gNow]].find(([, g]) => {
    const e = g as GraphEntry;
    return !e.model && !fetched?.model(e);
  }) as [number, GraphEntry] | undefined;
  if (summary) {
    const [at, g] = summary;
    const ops = g.ops ? ` (${g.ops.toLocaleString('en-US')} ops)` : '';
    return (
      `The graph of stage ${at}${ops} was saved as a summary, too large to keep op by op: a live ` +
      'explorer (run the cell again, with its kernel) draws the changes.'
    );
  }
  return (
    `The graph diff of stage ${compare} and stage ${stage} was not saved (the payload keeps ` +
    'consecutive graphs and the first against the last, within a size budget).'
  );
}

/** How node `now` differs from `before` (its match in the compared stage), one line each. */
export function differences(before: GraphNode, now: GraphNode): string[] {
  const out: string[] = [];
  if ((before.op ?? '') !== (now.op ?? '')) {
    out.push(`op was ${before.op ?? before.name ?? ''}`);
  }
  if ((before.attrs ?? '') !== (now.attrs ?? '')) {
    out.push(`attributes were ${before.attrs || '(none)'}`);
  }
  if ((before.type ?? '') !== (now.type ?? '')) {
    out.push(`type was ${shortType(before.type)}`);
  }
  if ((before.sharding ?? '') !== (now.sharding ?? '')) {
    out.push(`sharding was ${before.sharding || '(none)'}`);
  }
  if (!out.length) {
    out.push('its operands (or the region it is in) changed');
  }
  return out;
}
