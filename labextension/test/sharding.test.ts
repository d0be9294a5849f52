// Sharded functions in the explorer: the graph's sharding lines, tints and legend, the marks of
// collective ops and their panel, and the XLA pane of a partitioned executable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphIndex, replicated } from '../src/explorer/graphlayout';
import { GraphView } from '../src/explorer/graphview';
import { xlaFacts } from '../src/explorer/panels';
import type { ExplorerPayload, GraphModel, GraphNode } from '../src/explorer/types';
import { fire, installDom } from './fakedom';

installDom();

const ALL_REDUCE = 'all-reduce f32[4,16] (256 B), groups {0,1,2,3}{4,5,6,7}';

/** x (data, model) @ w (model, -) -> all-reduce -> + x -> reshard -> replicated result. */
function sharded(): GraphModel {
  const nodes: GraphNode[] = [
    { id: 'arg0', kind: 'arg', name: 'args[0]', ssa: '%arg0', type: 'tensor<8x16xf32>', in: [], sharding: '[{data}, {model}]' },
    { id: 'arg1', kind: 'arg', name: 'args[1]', ssa: '%arg1', type: 'tensor<16x16xf32>', in: [], sharding: '[{model}, {}]' },
    {
      id: 'op0',
      kind: 'op',
      op: 'stablehlo.dot_general',
      ssa: '%0',
      type: 'tensor<8x16xf32>',
      in: [0, 1],
      sharding: '[{data}, {}]',
      collectives: [ALL_REDUCE],
      src: 'f.py:9:20'
    },
    { id: 'op1', kind: 'op', op: 'stablehlo.add', ssa: '%1', type: 'tensor<8x16xf32>', in: [2, 0], sharding: '[{data}, {model}]' },
    { id: 'op2', kind: 'op', op: 'sdy.reshard', ssa: '%2', type: 'tensor<8x16xf32>', in: [3], sharding: '[{}, {}]', marks: ['collective'] },
    { id: 'res0', kind: 'result', name: 'result', type: 'float32[8,16]', in: [4], sharding: '[{}, {}]' }
  ];
  return { ops: 3, nodes, mesh: 'data=2, model=4' };
}

/** The same function on one device: no sharding, no collectives. */
function plain(): GraphModel {
  const nodes = sharded().nodes.map(n => {
    const bare = { ...n };
    delete bare.sharding;
    delete bare.collectives;
    delete bare.marks;
    return bare;
  });
  return { ops: 3, nodes };
}

function payloadOf(model: GraphModel, xla: ExplorerPayload['xla'] = null): ExplorerPayload {
  return {
    signature: { args: [], results: [{ path: 'result' }], skipped: [] },
    graphs: [{ stage: 0, stages: [0], kind: 'full', error: null, model }],
    xla
  } as unknown as ExplorerPayload;
}

/** A graph view showing `model`, and its boxes by model index. */
function drawn(model: GraphModel, view = new GraphView()): { view: GraphView; boxes: Map<number, Element> } {
  view.show(payloadOf(model), 0);
  const boxes = new Map<number, Element>();
  view.node.querySelectorAll('.rl-gn').forEach(g => boxes.set(Number((g as SVGGElement).dataset.i), g));
  return { view, boxes };
}

const shardClass = (g: Element | undefined): string | undefined => g?.getAttribute('class')?.split(' ').find(c => c.startsWith('rl-sh-'));

test('a sharded node shows its sharding as a label line', () => {
  const ix = new GraphIndex(sharded());
  const opts = { fold: true, expanded: new Set<number>() };
  assert.deepEqual(ix.label(0, opts), ['args[0]', '%arg0 f32[8,16]', '⟨{data}, {model}⟩']);
  assert.equal(ix.label(3, opts).at(-1), '⟨{data}, {model}⟩');
  assert.deepEqual(ix.label(2, opts).slice(-2), ['⟨{data}, {}⟩', '⇄ all-reduce']);
  const unsharded = new GraphIndex(plain());
  assert.ok(unsharded.nodes.every((_, i) => !unsharded.label(i, opts).some(l => l.includes('⟨') || l.includes('⇄'))));
});

test('the same sharding gets the same colour; a replicated one none', () => {
  assert.ok(replicated('[{}, {}]') && replicated('[{?}, {}]; [{}]') && replicated('[]'));
  assert.ok(!replicated('[{data}, {}]') && !replicated('[{}]; [{model}]'));
  const ix = new GraphIndex(sharded());
  assert.deepEqual([...ix.shardColour], [['[{data}, {model}]', 0], ['[{model}, {}]', 1], ['[{data}, {}]', 2]]);
  const { boxes } = drawn(sharded());
  assert.equal(shardClass(boxes.get(0)), 'rl-sh-0');
  assert.equal(shardClass(boxes.get(3)), 'rl-sh-0', 'same sharding as args[0]');
  assert.equal(shardClass(boxes.get(1)), 'rl-sh-1');
  assert.equal(shardClass(boxes.get(2)), 'rl-sh-2');
  assert.equal(shardClass(boxes.get(5)), undefined, 'replicated: no tint');
  assert.match(boxes.get(0)?.getAttribute('aria-label') ?? '', /sharding \[\{data\}, \{model\}\]/);
});

test('the legend shows the mesh and each sharding\'s colour, only for a sharded graph', () => {
  const { view } = drawn(sharded());
  const legend = view.node.querySelector('.rl-graph-legend') as HTMLElement;
  assert.equal(legend.hidden, false);
  assert.match(legend.textContent ?? '', /^mesh data=2, model=4/);
  const keys = Array.from(legend.querySelectorAll('.rl-shard-key')).map(k => [shardClass(k.firstElementChild ?? undefined), k.textContent]);
  assert.deepEqual(keys, [
    ['rl-sh-0', '[{data}, {model}]'],
    ['rl-sh-1', '[{model}, {}]'],
    ['rl-sh-2', '[{data}, {}]'],
    [undefined, 'replicated'],
    [undefined, '⇄ collectives between devices']
  ]);
  // the same view, now showing an unsharded payload: no legend, no tints
  const { boxes } = drawn(plain(), view);
  assert.equal(legend.hidden, true);
  assert.equal(legend.textContent, '');
  assert.ok([...boxes.values()].every(g => !shardClass(g) && !g.classList.contains('m-collective')));
});

test('collective ops are marked, and their panel lists sharding and collectives', () => {
  const { view, boxes } = drawn(sharded());
  const dot = boxes.get(2) as Element;
  assert.ok(dot.classList.contains('m-collective'));
  assert.deepEqual(Array.from(dot.querySelectorAll('.rl-gt-coll')).map(t => t.textContent), ['⇄ all-reduce']);
  const aria = dot.getAttribute('aria-label') ?? '';
  assert.ok(aria.endsWith(`sharding [{data}, {}] · ⇄ ${ALL_REDUCE}`), aria);
  const reshard = boxes.get(4) as Element;
  assert.ok(reshard.classList.contains('m-collective'), 'a Shardy collective op is marked too');
  assert.equal(reshard.querySelector('.rl-gt-coll')?.textContent, '⇄ collective');
  assert.ok(!boxes.get(3)?.classList.contains('m-collective'));

  const rows = (): Map<string, string> => {
    const panel = view.node.querySelector('.rl-gpanel') as HTMLElement;
    assert.equal(panel.hidden, false);
    const out = new Map<string, string>();
    panel.querySelectorAll('.rl-gp-row').forEach(r => {
      const key = r.querySelector('.rl-gp-key')?.textContent ?? '';
      out.set(key, Array.from(r.children).slice(1).map(c => c.textContent).join(' | '));
    });
    return out;
  };
  fire(dot, 'click');
  assert.equal(rows().get('sharding'), '[{data}, {}]');
  assert.equal(rows().get('collectives'), ALL_REDUCE);
  fire(boxes.get(3) as Element, 'click');
  assert.equal(rows().get('sharding'), '[{data}, {model}]');
  assert.equal(rows().has('collectives'), false);
  const unsharded = drawn(plain(), view);
  fire(unsharded.boxes.get(2) as Element, 'click');
  assert.ok(!rows().has('sharding') && !rows().has('collectives'));
});

const XLA = {
  stage: 'all',
  device: 'cpu',
  compile_seconds: 0.5,
  donate: false,
  hlo: 0,
  cost: { flops: 4096 },
  memory: { temp_size_in_bytes: 3072 }
};

const SHARDING = {
  partitions: 8,
  replicas: 1,
  mesh: 'data=2, model=4',
  devices: Array.from({ length: 8 }, (_, i) => `TFRT_CPU_${i}`),
  counts: { 'all-reduce': 2, 'all-gather': 1 },
  bytes: 5120,
  collectives: [
    {
      op: 'all-reduce',
      name: 'all-reduce.1',
      shape: 'f32[16,16]',
      bytes: 1024,
      devices: 'groups {0,1,2,3}{4,5,6,7}',
      dimensions: [],
      asynchronous: false,
      computation: 'main.9',
      op_name: 'jit(f)/dot_general',
      src: 'f.py:9:20',
      line: '%all-reduce.1 = f32[16,16] all-reduce(%dot)'
    },
    {
      op: 'all-gather',
      name: 'all-gather-start',
      shape: 'f32[32,16]',
      bytes: 2048,
      devices: 'all devices',
      dimensions: [0],
      asynchronous: true,
      computation: 'body.3',
      op_name: '',
      line: '%all-gather-start = f32[32,16] all-gather-start(%p)'
    }
  ],
  memory_per_device: { argument_size_in_bytes: 14336, temp_size_in_bytes: 3072, output_size_in_bytes: 512 }
};

function cells(table: Element | null): string[][] {
  assert.ok(table, 'table present');
  return Array.from((table as HTMLTableElement).tBodies[0].rows).map(r => Array.from(r.children).map(c => c.textContent ?? ''));
}

test('the XLA pane of a partitioned executable: devices, mesh, collectives, memory per device', () => {
  const facts = xlaFacts(payloadOf(plain(), { ...XLA, sharding: SHARDING } as ExplorerPayload['xla']));
  const text = facts.textContent ?? '';
  assert.match(text, /Partitioned over 8 devices \(mesh data=2, model=4\)\./);
  assert.match(text, /Collectives: 2 all-reduce, 1 all-gather \(5\.0 KiB of results per device\)\./);
  assert.deepEqual(cells(facts.querySelector('table.rl-collectives')), [
    ['all-reduce', 'f32[16,16]', '1.0 KiB', 'groups {0,1,2,3}{4,5,6,7}', 'f.py:9:20 jit(f)/dot_general', 'main.9'],
    ['all-gather (async)', 'f32[32,16]', '2.0 KiB', 'all devices', '-', 'body.3']
  ]);
  const first = (facts.querySelector('table.rl-collectives') as HTMLTableElement).tBodies[0].rows[0] as HTMLElement;
  assert.equal(first.title, '%all-reduce.1 = f32[16,16] all-reduce(%dot)', 'the HLO line on hover');
  assert.deepEqual(cells(facts.querySelector('table.rl-xla-memory')), [
    ['argument_size_in_bytes', '14.0 KiB'],
    ['temp_size_in_bytes', '3.0 KiB'],
    ['output_size_in_bytes', '512 B']
  ]);
  // The memory is per device, shown once (not again among the estimates).
  assert.deepEqual(cells(facts.querySelector('table.rl-xla-estimate')), [['flops', '4,096']]);
});

test('a partitioned executable without collectives says so', () => {
  const none = { ...SHARDING, mesh: '', counts: {}, bytes: 0, collectives: [] };
  const facts = xlaFacts(payloadOf(plain(), { ...XLA, sharding: none } as ExplorerPayload['xla']));
  assert.match(facts.textContent ?? '', /Partitioned over 8 devices\. ?No collectives\./);
  assert.equal(facts.querySelector('table.rl-collectives'), null);
});

test('an executable on one device has no sharding section', () => {
  const facts = xlaFacts(payloadOf(plain(), XLA as ExplorerPayload['xla']));
  const text = facts.textContent ?? '';
  assert.ok(!/Partitioned|collective|per device/i.test(text), text);
  assert.equal(facts.querySelector('table.rl-xla-memory'), null);
  assert.deepEqual(cells(facts.querySelector('table.rl-xla-estimate')), [
    ['flops', '4,096'],
    ['temp_size_in_bytes', '3,072 bytes']
  ]);
});
