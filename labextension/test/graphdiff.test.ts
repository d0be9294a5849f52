// The graph diff between two stages: the union of both graphs (shared boxes once, removed ones
// merged in where they were), what each box and edge is, read in either direction, and the graph
// pane drawing it with its legend and caption.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { edgeStatus, findGraphDiff, graphUnion, matchNowToOld } from '../src/explorer/graphdiff';
import { differences } from '../src/explorer/graphdiffview';
import { GraphView } from '../src/explorer/graphview';
import type { ExplorerPayload, GraphDiffEntry, GraphModel } from '../src/explorer/types';
import { fire, installDom } from './fakedom';

installDom();

/** Stage 0: x -> convert -> add(x, convert) -> result. */
function before(): GraphModel {
  return {
    ops: 2,
    nodes: [
      { id: 'arg0', kind: 'arg', name: 'x', path: 'args[0]', ssa: '%arg0', type: 'tensor<4xf32>', in: [] },
      { id: 'op0', kind: 'op', op: 'stablehlo.convert', ssa: '%0', type: 'tensor<4xf32>', in: [0], line: 3 },
      { id: 'op1', kind: 'op', op: 'stablehlo.add', ssa: '%1', type: 'tensor<4xf32>', in: [0, 1], line: 4 },
      { id: 'res0', kind: 'result', name: 'y', path: 'result', type: 'float32[4]', in: [2] }
    ]
  };
}

/** Stage 3: x -> add(x, x) -> negate -> result (the convert folded away, a negate added). */
function after(): GraphModel {
  return {
    ops: 2,
    nodes: [
      { id: 'arg0', kind: 'arg', name: 'x', path: 'args[0]', ssa: '%arg0', type: 'tensor<4xf32>', in: [] },
      { id: 'op0', kind: 'op', op: 'stablehlo.add', ssa: '%0', type: 'tensor<4xf32>', in: [0, 0], line: 3 },
      { id: 'op1', kind: 'op', op: 'stablehlo.negate', ssa: '%1', type: 'tensor<4xf32>', in: [1], line: 4 },
      { id: 'res0', kind: 'result', name: 'y', path: 'result', type: 'float32[4]', in: [2] }
    ]
  };
}

/** What graph_diff (Python) gives for stage 0 -> stage 3 (tests/test_graph_diff.py checks the
 * matching itself on real modules). */
const ENTRY: GraphDiffEntry = { before: 0, after: 3, match: [0, 2, -1, 3], changed: [1, 3], added: 1, removed: 1, summary: '1 added, 1 removed, 2 changed' };

function payload(): ExplorerPayload {
  const stage = (index: number) => ({ index, name: `s${index}`, text: index, structure: index < 3 ? 0 : 3, changed: true });
  return {
    schema_version: 1,
    meta: { function: 'f' },
    signature: { args: [], results: [{ path: 'result' }], skipped: [] },
    stages: [0, 1, 2, 3].map(stage),
    graphs: [
      { stage: 0, stages: [0, 1, 2], kind: 'full', error: null, model: before() },
      { stage: 3, stages: [3], kind: 'full', error: null, model: after() }
    ],
    graph_diffs: [ENTRY]
  } as unknown as ExplorerPayload;
}

test('the union draws shared boxes once and merges the removed ones in where they were', () => {
  const { toOld, changed } = matchNowToOld(ENTRY, 4, 4, false);
  const u = graphUnion(before(), after(), toOld, changed);
  const names = u.model.nodes.map(n => n.op ?? n.name);
  assert.deepEqual(names, ['x', 'stablehlo.convert', 'stablehlo.add', 'stablehlo.negate', 'y']);
  assert.deepEqual(u.status, ['same', 'removed', 'changed', 'added', 'changed']);
  assert.deepEqual(u.counts, { added: 1, removed: 1, changed: 2 });
  u.model.nodes.forEach((n, i) => assert.ok(n.in.every(s => s < i), `node ${i} follows its operands`));
  // the removed convert still feeds the add it fed; that edge and x -> convert are removed ones
  const convert = 1;
  const add = 2;
  assert.ok(u.model.nodes[add].in.includes(convert));
  assert.equal(edgeStatus(u, convert, add), 'removed');
  assert.equal(edgeStatus(u, 0, convert), 'removed');
  assert.equal(edgeStatus(u, add, 3), 'added');
  assert.equal(edgeStatus(u, 0, add), 'same');
  assert.deepEqual(u.old, [0, 1, 2, -1, 3]);
  assert.deepEqual(u.now, [0, -1, 1, 2, 3]);
});

test('read backwards (a later stage compared with an earlier one), added and removed swap', () => {
  const { toOld, changed } = matchNowToOld(ENTRY, 4, 4, true);
  assert.deepEqual(toOld, [0, -1, 1, 3]);
  assert.deepEqual([...changed].sort(), [2, 3]);
  const u = graphUnion(after(), before(), toOld, changed);
  const by = (op: string) => u.status[u.model.nodes.findIndex(n => (n.op ?? n.name) === op)];
  assert.equal(by('stablehlo.convert'), 'added');
  assert.equal(by('stablehlo.negate'), 'removed');
  assert.equal(by('stablehlo.add'), 'changed');
  const p = payload();
  assert.equal(findGraphDiff(p, 3, 1)?.reversed, true, 'stage 1 has stage 0\'s graph');
  assert.equal(findGraphDiff(p, 0, 3)?.reversed, false);
  assert.equal(findGraphDiff(p, 1, 2), null, 'one graph: nothing to compare');
});

test('a changed box says what it was', () => {
  const b = before().nodes[2];
  assert.deepEqual(differences(b, { ...b, attrs: 'x' }), ['attributes were (none)']);
  assert.deepEqual(differences(b, { ...b, type: 'tensor<8xf32>' }), ['type was f32[4]']);
  assert.deepEqual(differences(b, { ...b, in: [0, 0] }), ['its operands (or the region it is in) changed']);
});

test('the graph pane draws the diff on one layout, with classes, legend and caption', () => {
  const view = new GraphView(undefined, undefined, () => undefined);
  const p = payload();
  view.show(p, 3, 0, 0);
  const classes = () => Array.from(view.node.querySelectorAll('.rl-gn')).map(g => g.getAttribute('class') ?? '');
  assert.ok(classes().every(c => !/\bd-/.test(c)), 'off by default: the stage alone');
  assert.equal(view.node.querySelectorAll('.rl-gn').length, 4);
  const box = view.node.querySelector('.rl-gdiff-toggle')?.querySelector('input') as HTMLInputElement;
  box.checked = true;
  fire(box as unknown as Element, 'change');
  const drawn = classes();
  assert.equal(drawn.length, 5, 'the removed convert joins the drawing');
  for (const status of ['d-added', 'd-removed', 'd-changed', 'd-same']) {
    assert.ok(drawn.some(c => c.includes(status)), status);
  }
  const legend = view.node.querySelector('.rl-gdiff-legend') as HTMLElement;
  assert.equal(legend.hidden, false);
  assert.match(legend.textContent ?? '', /added \(only in stage 3\): 1.*removed \(only in stage 0\): 1.*changed: 2.*unchanged: 1/);
  const caption = view.node.querySelector('.rl-graph-note')?.textContent ?? '';
  assert.match(caption, /^Changes from stage 0 to stage 3, shared boxes drawn once: 1 added, 1 removed, 2 changed\./);
  assert.ok(view.node.querySelectorAll('.rl-ge.d-removed').length >= 2, 'removed edges are marked');
  // stages with one graph: the reason, and the stage alone
  view.show(p, 2, 1, 1);
  assert.match(view.node.querySelector('.rl-graph-note')?.textContent ?? '', /^Stage 1 has the same structure as stage 2: no box changed\./);
  assert.equal(legend.hidden, true);
  assert.ok(classes().every(c => !/\bd-/.test(c)));
});

/** The payload of a module past the graph cap: both graphs saved as summaries, no graph diff. */
function summaries(): ExplorerPayload {
  const p = payload();
  const summary = (stage: number, stages: number[]) => ({ stage, stages, kind: 'summary', ops: 12_000, error: null, svg: null });
  // (no result to offer a slice of: the fake DOM has no <option>)
  const signature = { args: [], results: [], skipped: [] };
  return { ...p, signature, graphs: [summary(0, [0, 1, 2]), summary(3, [3])], graph_diffs: [] } as unknown as ExplorerPayload;
}

test('graphs held as summaries: saved, the reason; live, asked of the kernel and drawn as one graph', () => {
  const check = (view: GraphView) => {
    const box = view.node.querySelector('.rl-gdiff-toggle')?.querySelector('input') as HTMLInputElement;
    box.checked = true;
    fire(box as unknown as Element, 'change');
  };
  const caption = (view: GraphView) => view.node.querySelector('.rl-graph-note')?.textContent ?? '';
  const saved = new GraphView(undefined, undefined, () => undefined);
  saved.show(summaries(), 3, 0, 0);
  check(saved);
  assert.match(caption(saved), /^The graph of stage 0 \(12,000 ops\) was saved as a summary, too large to keep op by op: a live explorer \(run the cell again, with its kernel\) draws the changes\./);

  const asked: [number, number | undefined][] = [];
  const live = new GraphView((stage, compare) => asked.push([stage, compare]), undefined, () => undefined);
  const p = summaries();
  live.show(p, 3, 0, 0);
  assert.equal(asked.length, 0, 'nothing asked until "changes from" is ticked');
  check(live);
  live.show(p, 3, 0, 0);
  assert.deepEqual(asked, [[3, 0]], 'asked once, with the compared stage');
  assert.match(caption(live), /^Asking the kernel for the graphs of stage 0 and stage 3, to draw the changes…/);
  // the kernel's diff names the stages asked (0 and 3); stage 1 shares stage 0's graph
  live.showModel({ stage: 3, model: after(), compare: 0, compare_model: before(), diff: ENTRY });
  const drawn = Array.from(live.node.querySelectorAll('.rl-gn')).map(g => g.getAttribute('class') ?? '');
  assert.equal(drawn.length, 5, 'the removed convert joins the drawing');
  assert.ok(drawn.some(c => c.includes('d-removed')) && drawn.some(c => c.includes('d-added')));
  assert.match(caption(live), /^Changes from stage 0 to stage 3, shared boxes drawn once: 1 added, 1 removed, 2 changed\./);
  live.show(p, 3, 1, 1);
  assert.equal(asked.length, 1, 'stage 1 has stage 0\'s graph: the diff is there already');
  assert.ok(Array.from(live.node.querySelectorAll('.rl-gn')).some(g => /d-removed/.test(g.getAttribute('class') ?? '')));
  // an error answer is said, and not asked again
  const failing = new GraphView((stage, compare) => asked.push([stage, compare]), undefined, () => undefined);
  const q = summaries();
  failing.show(q, 3, 0, 0);
  check(failing);
  failing.showError('stage 3 has 200,000 ops, more than the 100,000 the explorer draws');
  failing.show(q, 3, 0, 0);
  assert.match(caption(failing), /^Could not compare stage 0 and stage 3: stage 3 has 200,000 ops/);
  assert.equal(asked.length, 2);
});

test('a fetched model and diff are found as the payload\'s are', () => {
  const p = summaries();
  const [g0, g3] = p.graphs;
  assert.equal(findGraphDiff(p, 0, 3), null);
  const fetched = { model: (g: unknown) => (g === g0 ? before() : g === g3 ? after() : undefined), diffs: [ENTRY] };
  assert.equal(findGraphDiff(p, 0, 3, fetched)?.reversed, false);
  assert.equal(findGraphDiff(p, 3, 2, fetched)?.reversed, true);
  assert.equal(findGraphDiff(p, 0, 3, { ...fetched, diffs: [] }), null, 'models alone: no diff');
});
