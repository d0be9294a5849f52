// Python names in the explorer: arguments and results by the names the function gives them, a
// loop's carried values by its variables (graph labels, the signature pane, hovers on the IR).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphIndex } from '../src/explorer/graphlayout';
import { codeLine } from '../src/explorer/dom';
import { carriedText, mainLines, modelOfText, nameAndPath, nameValues, pyName, splitTypes, valueTitles } from '../src/explorer/names';
import { signaturePanel } from '../src/explorer/panels';
import type { ExplorerPayload, GraphModel, Signature } from '../src/explorer/types';
import { installDom } from './fakedom';

installDom();

const SIG: Signature = {
  args: [
    { index: 0, path: 'args[0]', type: 'float64[16]', mutated: false, donated: false },
    { index: 1, path: 'args[1]', type: 'float64[16]', mutated: true, donated: false }
  ],
  results: [
    { index: 0, path: 'result', type: 'float64[16]', preserved_from: null, writes_back: null },
    { index: 1, path: 'resargs[1]', type: 'float64[16]', preserved_from: null, writes_back: 'args[1]' }
  ],
  skipped: [['args[2]', '10']],
  names: { 'args[0]': 'A', 'args[1]': 'B', 'args[2]': 'steps', result: 't', 'resargs[1]': 'B' }
};

/** `heat(A, B, steps)`: A, B -> while (for _ in range(steps): B, (index), t) -> t. */
function heat(): GraphModel {
  return {
    ops: 4,
    nodes: [
      { id: 'arg0', kind: 'arg', name: 'A', path: 'args[0]', ssa: '%arg0', type: 'tensor<16xf64>', in: [] },
      { id: 'arg1', kind: 'arg', name: 'B', path: 'args[1]', ssa: '%arg1', type: 'tensor<16xf64>', in: [] },
      { id: 'op0', kind: 'op', op: 'stablehlo.constant', ssa: '%c', type: 'tensor<i64>', attrs: 'dense<0>', in: [], line: 3 },
      {
        id: 'op1',
        kind: 'op',
        op: 'stablehlo.while',
        ssa: '%0:3',
        type: 'tensor<16xf64>, tensor<i64>, tensor<16xf64>',
        in: [1, 2, 0],
        regions: ['cond', 'do'],
        title: 'for _ in range(steps) — line 5',
        carried: ['B', '(index)', 't'],
        iter_args: ['%iterArg', '%iterArg_0', '%iterArg_1'],
        line: 4
      },
      { id: 'op2', kind: 'op', op: 'stablehlo.compare', ssa: '%1', type: 'tensor<i1>', attrs: 'LT', in: [3], parent: 3, region: 0 },
      { id: 'op3', kind: 'op', op: 'stablehlo.return', type: 'tensor<i1>', in: [4], parent: 3, region: 0 },
      { id: 'op4', kind: 'op', op: 'stablehlo.add', ssa: '%1', type: 'tensor<16xf64>', in: [3, 3], parent: 3, region: 1 },
      { id: 'op5', kind: 'op', op: 'stablehlo.return', type: 'tensor<16xf64>', in: [3, 3, 6], parent: 3, region: 1 },
      { id: 'res0', kind: 'result', name: 't', path: 'result', type: 'float64[16]', in: [3] }
    ]
  };
}

const TEXT = [
  'module @reactant_heat {',
  '  func.func public @main(%arg0: tensor<16xf64>, %arg1: tensor<16xf64>) -> tensor<16xf64> {',
  '    %c = stablehlo.constant dense<0> : tensor<i64>',
  '    %0:3 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %c, %iterArg_1 = %arg0) : tensor<16xf64>, tensor<i64>, tensor<16xf64>',
  '    return %0#2 : tensor<16xf64>',
  '  }',
  '  func.func private @other(%arg0: tensor<16xf64>) -> tensor<16xf64> {',
  '    return %arg0 : tensor<16xf64>',
  '  }',
  '}'
];

test('a path is shown by the name the function gives it, else as itself', () => {
  assert.equal(pyName(SIG, 'args[0]'), 'A');
  assert.equal(pyName(SIG, 'kwargs[\'x\']'), "kwargs['x']");
  assert.equal(nameAndPath(SIG, 'args[2]'), 'steps (args[2])');
  const old = { ...SIG, names: undefined };
  assert.equal(pyName(old, 'args[0]'), 'args[0]', 'a payload saved before names keeps its paths');
});

test('a loop box names its carried values, not their types', () => {
  const model = heat();
  assert.deepEqual(splitTypes(model.nodes[3].type), ['tensor<16xf64>', 'tensor<i64>', 'tensor<16xf64>']);
  assert.equal(carriedText(model.nodes[3]), 'B, (index), t');
  const ix = new GraphIndex(model);
  const closed = ix.label(3, { fold: false, expanded: new Set() });
  assert.deepEqual(closed, ['▸ %0:3 = while', 'for _ in range(steps) — line 5', 'carries B, (index), t', '4 ops inside']);
  assert.ok(!closed.some(l => l.includes('i64[]')), 'the types give way to the names');
  assert.deepEqual(ix.label(0, { fold: false, expanded: new Set() }), ['A', '%arg0 f64[16]']);
  assert.deepEqual(ix.search('args[1]'), [1], 'search finds an argument by its path too');
  // a value without a name shows its type
  const partial = { ...model.nodes[3], carried: [null, '(index)', 't'] };
  assert.equal(carriedText(partial, t => t.replace('tensor<16xf64>', 'f64[16]')), 'f64[16], (index), t');
});

test('the IR view names main\'s arguments and the loop\'s carried values, in main only', () => {
  assert.deepEqual(mainLines(TEXT), [1, 5]);
  const titles = valueTitles(SIG, heat());
  assert.equal(titles.get('%arg0'), 'A · float64[16] · args[0]');
  assert.equal(titles.get('%iterArg_1'), 't: carried by the loop (for _ in range(steps) — line 5)');
  assert.match(titles.get('%0') ?? '', /%0#0 B, %0#1 \(index\), %0#2 t$/);
  const cell = codeLine(TEXT[3]);
  nameValues(cell, titles);
  const named = Array.from(cell.querySelectorAll('.rl-named')).map(v => [v.textContent, (v as HTMLElement).title]);
  assert.deepEqual(named.map(([t]) => t), ['%0', '%iterArg', '%arg1', '%iterArg_0', '%iterArg_1', '%arg0']);
  assert.ok(named.some(([t, title]) => t === '%arg1' && title === 'B · float64[16] · args[1]'));
  // @other's %arg0 is its own argument, not A: the view names main's lines only
  const [first, last] = mainLines(TEXT) as [number, number];
  assert.ok(TEXT.findIndex(l => l.includes('return %arg0')) > last && first === 1);
});

test('hovers use the graph model only of the very text shown', () => {
  const payload = {
    stages: [{ index: 0, text: 0 }, { index: 1, text: 1 }, { index: 2, text: 1 }],
    graphs: [{ stage: 1, stages: [1, 2], model: heat() }]
  } as unknown as ExplorerPayload;
  assert.equal(modelOfText(payload, 2), payload.graphs[0].model, 'same text: same SSA names');
  assert.equal(modelOfText(payload, 0), null);
  const other = { ...payload, stages: [payload.stages[0], payload.stages[1], { index: 2, text: 2 }] } as ExplorerPayload;
  assert.equal(modelOfText(other, 2), null, 'same structure, other text: its SSA names may differ');
});

test('the signature pane shows names beside paths', () => {
  const panel = signaturePanel({ signature: SIG } as ExplorerPayload);
  const rows = Array.from(panel.querySelectorAll('tr')).map(r => Array.from(r.querySelectorAll('td')).map(c => c.textContent));
  assert.deepEqual(rows[1], ['%arg0', 'A', 'args[0]', 'float64[16]', '']);
  assert.deepEqual(rows.find(r => r[2] === 'resargs[1]'), ['1', 'B', 'resargs[1]', 'float64[16]', 'written back to B (args[1])']);
  assert.deepEqual(rows.at(-1), ['steps', 'args[2]', '10']);
});
