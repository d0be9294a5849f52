// The accelerator in the explorer: a dot's precision in its op panel, and the compile notes
// (float64 emulated on a TPU) in the XLA pane.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphView } from '../src/explorer/graphview';
import { xlaFacts } from '../src/explorer/panels';
import type { ExplorerPayload, GraphModel, GraphNode } from '../src/explorer/types';
import { fire, installDom } from './fakedom';

installDom();

const ON_TPU = 'DEFAULT, DEFAULT: on a TPU, one bfloat16 pass (about 3 significant digits)';

function model(): GraphModel {
  const nodes: GraphNode[] = [
    { id: 'arg0', kind: 'arg', name: 'args[0]', ssa: '%arg0', type: 'tensor<4x8xf32>', in: [] },
    { id: 'arg1', kind: 'arg', name: 'args[1]', ssa: '%arg1', type: 'tensor<8x3xf32>', in: [] },
    { id: 'op0', kind: 'op', op: 'stablehlo.dot_general', ssa: '%0', type: 'tensor<4x3xf32>', in: [0, 1], precision: ON_TPU },
    { id: 'op1', kind: 'op', op: 'stablehlo.tanh', ssa: '%1', type: 'tensor<4x3xf32>', in: [2] },
    { id: 'res0', kind: 'result', name: 'result', type: 'float32[4,3]', in: [3] }
  ];
  return { ops: 2, nodes };
}

function payloadOf(m: GraphModel, xla: ExplorerPayload['xla'] = null): ExplorerPayload {
  return {
    signature: { args: [], results: [{ path: 'result' }], skipped: [] },
    graphs: [{ stage: 0, stages: [0], kind: 'full', error: null, model: m }],
    xla
  } as unknown as ExplorerPayload;
}

function panelRows(view: GraphView): Map<string, string> {
  const out = new Map<string, string>();
  const panel = view.node.querySelector('.rl-gpanel') as HTMLElement;
  panel.querySelectorAll('.rl-gp-row').forEach(r => {
    const key = r.querySelector('.rl-gp-key')?.textContent ?? '';
    out.set(key, Array.from(r.children).slice(1).map(c => c.textContent).join(' | '));
  });
  return out;
}

test("a dot's panel shows the precision it runs at; other ops have none", () => {
  const view = new GraphView();
  view.show(payloadOf(model()), 0);
  const boxes = new Map<number, Element>();
  view.node.querySelectorAll('.rl-gn').forEach(g => boxes.set(Number((g as SVGGElement).dataset.i), g));
  fire(boxes.get(2) as Element, 'click');
  assert.equal(panelRows(view).get('precision'), ON_TPU);
  fire(boxes.get(3) as Element, 'click');
  assert.equal(panelRows(view).has('precision'), false);
});

const XLA = { stage: 'all', device: 'TPU_0', compile_seconds: 0.5, donate: false, hlo: 0, cost: {}, memory: {} };

test('the XLA pane lists the compile notes, and none when there are none', () => {
  const note = 'float64 is emulated on a TPU (it has no 64-bit floating-point unit)';
  const facts = xlaFacts(payloadOf(model(), { ...XLA, notes: [note] } as ExplorerPayload['xla']));
  assert.deepEqual(Array.from(facts.querySelectorAll('.rl-xla-note')).map(p => p.textContent), [note]);
  const none = xlaFacts(payloadOf(model(), XLA as ExplorerPayload['xla']));
  assert.equal(none.querySelectorAll('.rl-xla-note').length, 0);
});
