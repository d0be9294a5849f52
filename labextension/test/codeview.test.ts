// The "LLVM IR / asm" tab: kernels listed in the order the optimized HLO computes them, each with
// the fusion's origin; the first true fusion shown first; a text left out of a saved output says
// how to get it; live, it is asked of the kernel once, and the answer (or the error) is shown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CodeView, firstKernel, kernelNamed, kernelRows, missingNote } from '../src/explorer/codeview';
import { TextStore } from '../src/explorer/texts';
import type { ExplorerPayload, XlaCode } from '../src/explorer/types';
import { installDom } from './fakedom';

installDom();

const CODE: XlaCode = {
  kernels: [
    { name: 'wrapped_slice.1', llvm_ir: 1, assembly: null },
    { name: 'wrapped_slice', llvm_ir: null, assembly: 2 },
    { name: 'add_multiply_fusion', llvm_ir: null, assembly: null },
    { name: 'copy', llvm_ir: null, assembly: null }
  ],
  budget: 32_768,
  assembly_error: null
};

/** Stages 0 (StableHLO) and 1 (XLA's optimized HLO, drawn as a graph naming its fusions). */
function payload(code: XlaCode = CODE): ExplorerPayload {
  const op = (ssa: string, title?: string) => ({ id: ssa, kind: 'op', op: 'fusion', ssa: `%${ssa}`, title, in: [] });
  return {
    schema_version: 1,
    meta: { function: 'heat' },
    signature: { args: [], results: [], skipped: [] },
    texts: [
      { id: 0, lines: 1, chars: 6, encoding: 'plain', data: 'module' },
      { id: 1, lines: 1, chars: 17, encoding: 'plain', data: 'define void @k1()' },
      { id: 2, lines: 1, chars: 8, encoding: 'plain', data: 'asm: ret' }
    ],
    stages: [0, 1].map(index => ({ index, name: `s${index}`, text: 0, structure: index, changed: true })),
    graphs: [
      {
        stage: 1,
        stages: [1],
        kind: 'full',
        error: null,
        model: {
          ops: 3,
          nodes: [op('wrapped_slice'), op('add_multiply_fusion', 'from k.py:31: stablehlo.add ×4'), op('wrapped_slice.1')]
        }
      }
    ],
    xla: { stage: 's0', device: 'cpu:0', compile_seconds: 0.1, donate: false, hlo: 0, cost: {}, memory: {}, code }
  } as unknown as ExplorerPayload;
}

test('kernels are listed as the optimized HLO computes them, each with what it was made from', () => {
  const rows = kernelRows(payload());
  assert.deepEqual(rows.map(r => r.name), ['wrapped_slice', 'add_multiply_fusion', 'wrapped_slice.1', 'copy']);
  assert.equal(rows[1].from, 'from k.py:31: stablehlo.add ×4');
  assert.equal(rows[1].op, 'fusion');
  assert.equal(rows[3].op, '', 'a kernel the graph does not show');
  assert.equal(firstKernel(rows), 'add_multiply_fusion', 'the first true fusion');
  assert.equal(firstKernel(rows.filter(r => !r.name.endsWith('fusion'))), 'wrapped_slice');
  assert.deepEqual(kernelRows({ ...payload(), xla: null } as unknown as ExplorerPayload), []);
  assert.equal(CodeView.has(payload()), true);
  assert.equal(CodeView.has({ ...payload(), xla: null } as unknown as ExplorerPayload), false);
});

test('a kernel is found by its instruction, a small loop compiled whole by its call', () => {
  const kernels = new Set(['add_fusion', 'call_computation']);
  assert.equal(kernelNamed('%add_fusion', kernels), 'add_fusion');
  assert.equal(kernelNamed('%call', kernels), 'call_computation');
  assert.equal(kernelNamed('%while.1', kernels), null);
  assert.equal(kernelNamed(undefined, kernels), null);
  const small = payload({ kernels: [{ name: 'call_computation', llvm_ir: 1, assembly: 2 }], budget: 1, assembly_error: null });
  small.graphs[0].model?.nodes.push({ id: 'call', kind: 'op', op: 'call', ssa: '%call', in: [] });
  assert.deepEqual(kernelRows(small).map(r => [r.name, r.op]), [['call_computation', 'call']]);
});

test('a text left out of a saved output says how to get it; no disassembler is said as such', () => {
  const [row] = kernelRows(payload()).filter(r => r.name === 'copy');
  const note = missingNote(CODE, row, 'llvm_ir') ?? '';
  assert.match(note, /^The LLVM IR of copy was not saved with this output: it keeps at most 32 KiB/);
  assert.match(note, /A live explorer \(run the cell again, with its kernel\) shows it; in Python: ex\.xla\.llvm_ir\('copy'\)\.$/);
  const noTool = { ...CODE, assembly_error: 'disassembling copy needs objdump (binutils) or llvm-objdump on PATH' };
  assert.equal(missingNote(noTool, row, 'assembly'), 'No assembly: disassembling copy needs objdump (binutils) or llvm-objdump on PATH.');
  const [kept] = kernelRows(payload()).filter(r => r.name === 'wrapped_slice.1');
  assert.equal(missingNote(CODE, kept, 'llvm_ir'), null);
});

test('saved, a left-out text is explained and nothing is asked', async () => {
  const view = new CodeView();
  const p = payload();
  await view.show(p, new TextStore(p.texts));
  const note = view.node.querySelector('.rl-code-note') as HTMLElement;
  assert.equal(note.hidden, false);
  assert.match(note.textContent ?? '', /^The LLVM IR of add_multiply_fusion was not saved/);
  const picked = view.node.querySelector('tr.selected') as HTMLElement;
  assert.equal(picked.dataset.kernel, 'add_multiply_fusion');
  assert.equal(view.node.querySelectorAll('tr').length, 1 + 4, 'a head, then the four kernels');
});

test('live, a left-out text is asked of the kernel once and shown when it comes', async () => {
  const asked: string[] = [];
  const view = new CodeView((kernel, what) => asked.push(`${what} ${kernel}`));
  const p = payload();
  const store = new TextStore(p.texts);
  view.select('copy', 'assembly');
  await view.show(p, store);
  await view.show(p, store);
  assert.deepEqual(asked, ['assembly copy'], 'asked once');
  const note = view.node.querySelector('.rl-code-note') as HTMLElement;
  assert.match(note.textContent ?? '', /^Asking the kernel for the assembly of copy/);
  view.received('copy', 'assembly', 'copy:\n  ret');
  assert.equal(note.hidden, true);
  const shown = view.node.querySelector('.rl-text-asm') as HTMLElement;
  assert.equal(shown.hidden, false);
  await new Promise(resolve => setTimeout(resolve, 0));
  assert.match(shown.textContent ?? '', /assembly of kernel copy · 2 lines/);
  // an error answer is shown as the error, and not asked again
  view.select('wrapped_slice', 'llvm_ir');
  await view.show(p, store);
  view.refused('wrapped_slice', 'llvm_ir', 'ReactantLabError: no kernel');
  await view.show(p, store);
  assert.deepEqual(asked, ['assembly copy', 'llvm_ir wrapped_slice']);
  assert.equal(note.textContent, 'ReactantLabError: no kernel');
  assert.ok(note.classList.contains('rl-error-text'));
  // no disassembler where the payload was made: said, not asked
  const noTool = payload({ ...CODE, assembly_error: 'disassembling copy needs objdump' });
  view.select('copy', 'assembly');
  await view.show(noTool, new TextStore(noTool.texts));
  assert.equal(note.textContent, 'No assembly: disassembling copy needs objdump.');
  assert.equal(asked.length, 2);
});
