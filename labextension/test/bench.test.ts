// The benchmark in the explorer's timing tab: copies to and from the device timed apart for NumPy
// code, and the roofline's peaks, each marked measured or given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timingPanel, transferCell } from '../src/explorer/panels';
import type { BenchEntry, BenchRowEntry, ExplorerPayload } from '../src/explorer/types';
import { installDom } from './fakedom';

installDom();

function row(name: string, kind: 'preset' | 'baseline', copies: boolean): BenchRowEntry {
  return {
    name,
    kind,
    samples_s: [1e-4, 1e-4, 1e-4],
    median_s: 1e-4,
    iqr_s: 0,
    min_s: 1e-4,
    compile_s: kind === 'preset' ? 0.1 : null,
    ratio: 1,
    flops: 1e6,
    bytes_accessed: 1e6,
    roofline_fraction: 0.5,
    calls_per_sample: 1,
    noisy: false,
    gflops_per_s: 10,
    gb_per_s: 10,
    h2d_bytes: copies ? 262144 : null,
    h2d_s: copies ? 2.5e-5 : null,
    d2h_bytes: copies ? 1024 : null,
    d2h_s: copies ? 5e-6 : null,
    with_transfers_s: copies ? 1.3e-4 : null
  };
}

function panel(bench: BenchEntry): HTMLElement {
  return timingPanel({ stages: [], run: {}, bench } as unknown as ExplorerPayload);
}

const ROOF = { device: 'TPU_0', peak_flops: 1.5e14, peak_bytes_per_s: 8e11, seconds: 0.4, peak_flops_bf16: 1.9e14 };

function cells(table: Element | null): string[][] {
  assert.ok(table, 'table present');
  return Array.from((table as HTMLTableElement).tBodies[0].rows).map(r => Array.from(r.children).map(c => c.textContent ?? ''));
}

test('a NumPy kernel shows its copies to and from the device apart from its run', () => {
  const bench: BenchEntry = {
    fn_name: 'stencil',
    mode: 'numpy',
    device: 'TPU_0',
    reference: 'numpy',
    skipped: {},
    roofline: { ...ROOF, measured: ['peak_flops', 'peak_flops_bf16', 'peak_bytes_per_s'] },
    rows: [row('all', 'preset', true), row('numpy', 'baseline', false)],
    compute_dtype: 'float32'
  };
  const node = panel(bench);
  const head = Array.from(node.querySelector('table.rl-bench')?.querySelectorAll('th') ?? []).map(h => h.textContent);
  assert.deepEqual(head.slice(-2), ['to device', 'from device']);
  const [all, numpy] = cells(node.querySelector('table.rl-bench'));
  assert.deepEqual(all.slice(-2), ['256.0 KiB, 25.0 µs', '1.0 KiB, 5.0 µs']);
  assert.deepEqual(numpy.slice(-2), ['-', '-']);
  const text = node.textContent ?? '';
  assert.match(text, /to device \/ from device: the copies a call of NumPy arrays makes/);
  assert.match(text, /150 TFLOP\/s float32 matmul \(measured\), 190 TFLOP\/s bfloat16 matmul \(measured\), 800 GB\/s copy \(measured\); float32 work/);
});

test('JAX code has no copy columns; bfloat16 work is held to the bfloat16 peak; given peaks say so', () => {
  const bench: BenchEntry = {
    fn_name: 'mlp',
    mode: 'jax',
    device: 'TPU_0',
    reference: 'jax',
    skipped: {},
    roofline: { ...ROOF, measured: ['peak_bytes_per_s'] },
    rows: [row('all', 'preset', false), row('jax', 'baseline', false)],
    compute_dtype: 'bfloat16'
  };
  const node = panel(bench);
  const head = Array.from(node.querySelector('table.rl-bench')?.querySelectorAll('th') ?? []).map(h => h.textContent);
  assert.ok(!head.includes('to device'), head.join());
  const text = node.textContent ?? '';
  assert.ok(!/to device \/ from device/.test(text));
  assert.match(text, /float32 matmul \(given\), .* bfloat16 matmul \(given\), 800 GB\/s copy \(measured\); bfloat16 work, so 190 TFLOP\/s/);
});

test('a copy cell reads bytes and time, or "-"', () => {
  assert.equal(transferCell(512, 1.5e-3), '512 B, 1.50 ms');
  assert.equal(transferCell(null, null), '-');
});
