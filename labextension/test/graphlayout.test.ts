// The interactive graph's model and layout: folding, regions, slices, search, and a 1,000-op
// chain laid out narrow, fast and without overlaps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphIndex, constValue, layout, shortType, type LBox } from '../src/explorer/graphlayout';
import type { GraphModel, GraphNode } from '../src/explorer/types';

/** arg0 -> `steps` x (const, broadcast, multiply, add) -> result: 4 ops a step. */
function chain(steps: number): GraphModel {
  const nodes: GraphNode[] = [{ id: 'arg0', kind: 'arg', name: 'args[0]', ssa: '%arg0', type: 'tensor<8xf64>', in: [] }];
  let prev = 0;
  let v = 0;
  for (let s = 0; s < steps; s++) {
    const c = nodes.length;
    nodes.push({ id: `op${c - 1}`, kind: 'op', op: 'stablehlo.constant', ssa: `%cst_${s}`, type: 'tensor<f64>', attrs: 'dense<2.500000e-01>', in: [], line: c });
    nodes.push({ id: `op${c}`, kind: 'op', op: 'stablehlo.broadcast_in_dim', ssa: `%${v++}`, type: 'tensor<8xf64>', attrs: 'dims = []', in: [c], line: c + 1 });
    nodes.push({ id: `op${c + 1}`, kind: 'op', op: 'stablehlo.multiply', ssa: `%${v++}`, type: 'tensor<8xf64>', in: [prev, c + 1], line: c + 2, src: 'k.py:3:4' });
    nodes.push({ id: `op${c + 2}`, kind: 'op', op: 'stablehlo.add', ssa: `%${v++}`, type: 'tensor<8xf64>', in: [c + 2, 0], line: c + 3 });
    prev = c + 3;
  }
  nodes.push({ id: 'res0', kind: 'result', name: 'result', type: 'float64[8]', in: [prev] });
  return { ops: steps * 4, nodes };
}

/** arg0 -> while (cond: compare; do: add, return) -> result. */
function loop(): GraphModel {
  const nodes: GraphNode[] = [
    { id: 'arg0', kind: 'arg', name: 'args[0]', ssa: '%arg0', type: 'tensor<i64>', in: [] },
    { id: 'op0', kind: 'op', op: 'stablehlo.while', ssa: '%0', type: 'tensor<i64>', in: [0], regions: ['cond', 'do'], title: 'while x < 3 — line 4' },
    { id: 'op1', kind: 'op', op: 'stablehlo.compare', ssa: '%1', type: 'tensor<i1>', attrs: 'LT', in: [1], parent: 1, region: 0 },
    { id: 'op2', kind: 'op', op: 'stablehlo.return', type: 'tensor<i1>', in: [2], parent: 1, region: 0 },
    { id: 'op3', kind: 'op', op: 'stablehlo.add', ssa: '%2', type: 'tensor<i64>', in: [1, 0], parent: 1, region: 1 },
    { id: 'op4', kind: 'op', op: 'stablehlo.return', type: 'tensor<i64>', in: [4], parent: 1, region: 1 },
    { id: 'res0', kind: 'result', name: 'result', type: 'int64[]', in: [1] }
  ];
  return { ops: 5, nodes };
}

function overlaps(boxes: LBox[]): boolean {
  const flat = boxes.filter(b => b.kind !== 'region');
  const byY = [...flat].sort((a, b) => a.y - b.y);
  for (let i = 0; i < byY.length; i++) {
    for (let j = i + 1; j < byY.length && byY[j].y < byY[i].y + byY[i].h; j++) {
      const [a, b] = [byY[i], byY[j]];
      if (a.x < b.x + b.w && b.x < a.x + a.w) {
        return true;
      }
    }
  }
  return false;
}

test('labels: short types and constant values', () => {
  assert.equal(shortType('tensor<126x126xf64>'), 'f64[126,126]');
  assert.equal(shortType('tensor<f32>, tensor<2x3xi1>'), 'f32[], i1[2,3]');
  assert.equal(constValue('dense<2.500000e-01>'), '0.25');
  assert.equal(constValue('dense<true>'), 'true');
});

test('constants and broadcasts of constants fold into their users (a toggle)', () => {
  const ix = new GraphIndex(chain(3));
  assert.deepEqual(ix.foldable.filter(Boolean).length, 6);
  const folded = layout(ix, { fold: true, expanded: new Set() });
  const open = layout(ix, { fold: false, expanded: new Set() });
  assert.equal(folded.boxes.length, 1 + 2 * 3 + 1);
  assert.equal(open.boxes.length, 1 + 4 * 3 + 1);
  const mul = folded.boxes.find(b => ix.nodes[b.i].op === 'stablehlo.multiply');
  assert.ok(mul?.lines.some(l => l.includes('c=0.25')), JSON.stringify(mul?.lines));
  assert.match(mul?.lines[0] ?? '', /^%\d+ = multiply$/);
});

test('a 1,000-op chain lays out fast, narrow, without overlaps', () => {
  const ix = new GraphIndex(chain(250));
  const t0 = performance.now();
  const lay = layout(ix, { fold: true, expanded: new Set() });
  const ms = performance.now() - t0;
  assert.ok(ms < 500, `${ms} ms`);
  assert.equal(lay.boxes.length, 502);
  assert.ok(lay.width < 700, `width ${lay.width}`);
  assert.ok(!overlaps(lay.boxes));
  for (const s of lay.segs) {
    assert.ok(s.pts.every(Number.isFinite));
  }
});

test('regions open inside their op, close to one box', () => {
  const ix = new GraphIndex(loop());
  assert.deepEqual([...ix.defaultExpanded()], [1]);
  const open = layout(ix, { fold: true, expanded: new Set([1]) });
  const region = open.boxes.find(b => b.i === 1 && b.kind === 'region');
  assert.ok(region && region.frames?.length === 2);
  for (const b of open.boxes.filter(x => ix.nodes[x.i].parent === 1)) {
    assert.ok(b.x >= region.x && b.x + b.w <= region.x + region.w + 0.5, 'inside its region op');
    assert.ok(b.y >= region.y && b.y + b.h <= region.y + region.h + 0.5);
  }
  assert.ok(open.boxes.some(b => b.kind === 'entry'), 'block args drawn in the regions');
  const closed = layout(ix, { fold: true, expanded: new Set() });
  assert.deepEqual(closed.boxes.map(b => b.kind), ['arg', 'collapsed', 'result']);
  assert.match(closed.boxes[1].lines.join(' '), /4 ops inside/);
});

test('slices: producers and consumers, through regions', () => {
  const ix = new GraphIndex(loop());
  assert.deepEqual([...ix.producers(6)].sort(), [0, 1, 2, 3, 4, 5, 6]);
  // through the loop's block arguments (the while op) to everything in it
  assert.deepEqual([...ix.consumers(0)].sort(), [0, 1, 2, 3, 4, 5, 6]);
  assert.ok([1, 5, 6].every(i => ix.consumers(4).has(i)), 'a region terminator feeds its op');
  assert.ok(!ix.producers(2).has(6));
  const only = layout(ix, { fold: true, expanded: new Set([1]), only: new Set([4, 5]) });
  assert.deepEqual(only.boxes.map(b => b.i).sort(), [1, 1, 4, 5]);
});

test('search by op name and SSA value', () => {
  const ix = new GraphIndex(chain(3));
  assert.equal(ix.search('multiply').length, 3);
  assert.deepEqual(ix.search('%2'), [4]);
  assert.deepEqual(ix.search('2'), [4]);
  assert.deepEqual(ix.search('%cst_1'), [5]);
  assert.deepEqual(ix.search('args[0]'), [0]);
  assert.deepEqual(ix.search(''), []);
  // a folded constant is shown by its first user
  assert.equal(ix.shownAs(1, { fold: true, expanded: new Set() }), 3);
});
