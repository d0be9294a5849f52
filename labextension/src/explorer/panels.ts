// The read-only panes: op metrics across stages, XLA's compile facts, timings (and benchmark
// rows when the payload carries them), and the call's signature.

import { button, el, formatBytes, formatSeconds, table } from './dom';
import { nameAndPath, pyName } from './names';
import type { BenchEntry, ExplorerPayload, Roofline, XlaPasses, XlaSharding } from './types';

/** Op counts, one column per stage; a cell that differs from the stage before is marked. */
export function metricsPanel(payload: ExplorerPayload, selected: number): HTMLElement {
  const m = payload.metrics;
  const node = el('div', 'rl-metrics');
  const t = el('table', 'rl-ops');
  const head = el('tr');
  head.appendChild(el('th', 'rl-sticky', 'op'));
  m.stages.forEach((name, i) => {
    // The stage's number and name (the name wraps; the whole of it is the tooltip).
    const th = el('th', i === selected ? 'selected' : '');
    th.scope = 'col';
    th.title = `stage ${i}: ${name}`;
    th.append(el('span', 'rl-col-index', String(i)), el('span', 'rl-col-name', name));
    head.appendChild(th);
  });
  t.createTHead().appendChild(head);
  const body = t.createTBody();
  const addRow = (label: string, values: number[], cls = '') => {
    const tr = el('tr', cls);
    tr.appendChild(el('th', 'rl-sticky', label));
    values.forEach((v, i) => {
      const prev = i > 0 ? values[i - 1] : v;
      const td = el('td', v > prev ? 'up' : v < prev ? 'down' : '', String(v));
      if (i === selected) {
        td.classList.add('selected');
      }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  };
  m.ops.forEach((op, r) => addRow(op, m.counts[r]));
  addRow('total', m.totals, 'rl-total');
  node.append(el('p', 'rl-note', 'Op counts per stage: one column per stage, the selected one outlined.'), t);
  return node;
}

/** What XLA's partitioner made of a sharded module: the devices and mesh, the collectives it
 * inserted (each one's hover text its HLO line), and the memory each device needs. */
function shardingFacts(sh: XlaSharding): HTMLElement[] {
  const mesh = sh.mesh ? ` (mesh ${sh.mesh})` : '';
  const replicas = sh.replicas > 1 ? `, ${sh.replicas} replicas` : '';
  const head = el('p', 'rl-note rl-xla-partitions', `Partitioned over ${sh.partitions} devices${mesh}${replicas}.`);
  head.title = sh.devices.join(', ');
  const counts = Object.entries(sh.counts).map(([op, n]) => `${n} ${op}`);
  const out: HTMLElement[] = [
    head,
    el(
      'p',
      'rl-note rl-xla-counts',
      counts.length ? `Collectives: ${counts.join(', ')} (${formatBytes(sh.bytes)} of results per device).` : 'No collectives.'
    )
  ];
  if (sh.collectives.length) {
    const t = table(
      ['collective', 'shape per device', 'bytes', 'devices', 'source', 'computation'],
      sh.collectives.map(c => [
        c.asynchronous ? `${c.op} (async)` : c.op,
        c.shape,
        formatBytes(c.bytes),
        c.devices,
        [c.src, c.op_name].filter(Boolean).join(' ') || '-',
        c.computation
      ]),
      'rl-collectives'
    );
    sh.collectives.forEach((c, i) => (t.tBodies[0].rows[i].title = c.line));
    out.push(t);
  }
  const memory = Object.entries(sh.memory_per_device);
  if (memory.length) {
    out.push(table(['memory per device', 'size'], memory.map(([k, v]) => [k, formatBytes(v)]), 'rl-kv rl-xla-memory'));
  }
  return out;
}

/** XLA's compile facts (first, for a partitioned executable, its sharding); the HLO text goes
 * below in a TextView. `onKernel` shows a kernel's code (its name in the kernels' list links
 * there). */
export function xlaFacts(payload: ExplorerPayload, onKernel?: (kernel: string, what: 'llvm_ir') => void): HTMLElement {
  const x = payload.xla;
  const node = el('div', 'rl-xla-facts');
  if (!x) {
    node.appendChild(el('p', 'rl-note', 'Not compiled.'));
    return node;
  }
  node.appendChild(
    el(
      'p',
      'rl-note',
      `Stage ${x.stage} compiled for ${x.device} in ${formatSeconds(x.compile_seconds)}` +
        (x.donate ? ', arguments donated.' : '.')
    )
  );
  for (const note of x.notes ?? []) {
    node.appendChild(el('p', 'rl-note rl-xla-note', note));
  }
  if (x.sharding) {
    node.append(...shardingFacts(x.sharding));
  }
  // A partitioned executable's memory is per device, in the table above.
  // The cost keys in words and reading order (the payload's; XLA's own key on hover).
  const named: string[][] = x.cost_names ?? Object.keys(x.cost).map(k => [k, k]);
  const costKeys = named.map(([k]) => k).filter(k => k in x.cost);
  const nameOf = new Map(named.map(([k, n]) => [k, n]));
  const rows: (string | number)[][] = [
    ...costKeys.map(k => [nameOf.get(k) ?? k, figure(x.cost[k])]),
    ...(x.sharding ? [] : Object.entries(x.memory).map(([k, v]) => [k, `${v.toLocaleString('en-US')} bytes`]))
  ];
  if (rows.length) {
    const t = table(['XLA estimate', 'value'], rows, 'rl-kv rl-xla-estimate');
    t.tBodies[0]?.querySelectorAll('tr').forEach((tr, i) => {
      if (i < costKeys.length) {
        tr.title = `XLA's cost analysis: ${costKeys[i]}`;
      }
    });
    node.appendChild(t);
  }
  if (x.passes) {
    node.append(...xlaPasses(x.passes, payload.stages.length - 1, x.code ? onKernel : undefined));
  }
  return node;
}

/** How many of XLA's slowest passes the XLA tab lists. */
const PASS_ROWS = 12;

/** XLA's own stages in brief: where they are in the list, where the compile's time went, and
 * its slowest passes with their runs; the kernels XLA:CPU emitted. */
function xlaPasses(p: XlaPasses, last: number, onKernel?: (kernel: string, what: 'llvm_ir') => void): HTMLElement[] {
  const runs = p.totals.reduce((n, t) => n + t[1], 0);
  const changed = p.totals.reduce((n, t) => n + t[2], 0);
  const said = p.every_pass
    ? `${changed} of ${runs} pass runs changed the module`
    : `${changed} pass runs changed the module (this large module lists only those)`;
  const out: HTMLElement[] = [
    el(
      'p',
      'rl-note rl-xla-passes',
      `XLA's own stages are stages ${p.first} to ${last}: the HLO it began with, then the module ` +
        `after each of its passes that changed it (${said}). Lowering to HLO ` +
        `${formatSeconds(p.import_seconds)}, HLO passes ${formatSeconds(p.pass_seconds)} ` +
        `(printing the module after each included), code generation ${formatSeconds(p.codegen_seconds)}.`
    ),
    table(
      ['slowest passes', 'runs', 'changed', 'time'],
      p.totals.slice(0, PASS_ROWS).map(([name, n, c, sec]) => [name, n, c, formatSeconds(sec)]),
      'rl-xla-pass-table'
    )
  ];
  if (p.kernels.length) {
    const line = el('p', 'rl-note rl-xla-kernels', 'Kernels XLA:CPU emitted: ');
    p.kernels.forEach((name, i) => {
      line.append(
        onKernel ? button(name, () => onKernel(name, 'llvm_ir'), 'rl-xla-kernel') : name,
        i + 1 < p.kernels.length ? ', ' : onKernel ? ' (each links to its LLVM IR and assembly).' : '.'
      );
    });
    out.push(line);
  }
  return out;
}

/** A cost figure: a count with thousands separators, a fraction with 3 digits. */
function figure(v: number): string {
  return Number.isInteger(v) || Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toPrecision(3);
}

function runRows(payload: ExplorerPayload): (string | number)[][] {
  const rows: (string | number)[][] = [];
  const stages = payload.stages;
  const passes = payload.xla?.passes;
  // XLA's own stages (after the MLIR ones) are part of the XLA compile.
  const mlir = stages.slice(1, passes ? passes.first : stages.length);
  rows.push(['trace and lower', formatSeconds(stages[0]?.seconds)]);
  rows.push(['stages (passes)', formatSeconds(mlir.reduce((t, s) => t + s.seconds, 0))]);
  if (payload.xla) {
    rows.push(['XLA compile', formatSeconds(payload.xla.compile_seconds)]);
  }
  if (passes) {
    rows.push(
      ['  lowering to HLO', formatSeconds(passes.import_seconds)],
      ['  HLO passes', formatSeconds(passes.pass_seconds)],
      ['  code generation', formatSeconds(passes.codegen_seconds)]
    );
  }
  for (const [k, v] of Object.entries(payload.run ?? {})) {
    const label = k.replace(/_seconds$/, '').replace(/_/g, ' ');
    if (k.endsWith('seconds') && typeof v === 'number') {
      rows.push([label, formatSeconds(v)]);
    } else if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') {
      rows.push([label, String(v)]);
    }
  }
  return rows;
}

const fmt = (v: number | null | undefined, digits = 3) =>
  v === null || v === undefined ? '-' : v.toPrecision(digits);

/** How a row compares with the reference, in words: "1.78× faster than numpy". Same wording as
 * `reactant_lab.bench.result.versus`. */
export function versus(ratio: number | null | undefined, name: string, reference: string | null): string {
  if (reference === null || ratio === null || ratio === undefined || !(ratio > 0)) {
    return '-';
  }
  if (name === reference) {
    return 'baseline';
  }
  if (Math.abs(ratio - 1) < 0.01) {
    return `same as ${reference}`;
  }
  const times = ratio < 1 ? 1 / ratio : ratio;
  const x = times < 10 ? times.toPrecision(3) : String(Math.round(times));
  return `${x}× ${ratio < 1 ? 'faster' : 'slower'} than ${reference}`;
}

/** Bytes copied one way and the time it took ("1.0 MiB, 85.2 µs"), as
 * `reactant_lab.bench.result.transfer_cell`; "-" without. */
export function transferCell(bytes: number | null | undefined, seconds: number | null | undefined): string {
  if (bytes === null || bytes === undefined || seconds === null || seconds === undefined) {
    return '-';
  }
  return `${formatBytes(bytes)}, ${formatSeconds(seconds)}`;
}

const PEAK_LABELS: [keyof Roofline, string][] = [
  ['peak_flops', 'float32 matmul'],
  ['peak_flops_bf16', 'bfloat16 matmul'],
  ['peak_bytes_per_s', 'copy']
];

/** "186 GFLOP/s", "197 TFLOP/s" (from 10^12 up), as `reactant_lab.bench.roofline.flops_rate`. */
const flopsRate = (v: number) => (v >= 1e12 ? `${fmt(v / 1e12)} TFLOP/s` : `${fmt(v / 1e9)} GFLOP/s`);

/** The device's peaks in words, each marked measured or given (as `Roofline.describe`), and the
 * compute peak that applies to the call's element type. */
export function rooflineNote(rf: Roofline, dtype: string): string {
  const measured = rf.measured;
  const peaks = PEAK_LABELS.flatMap(([key, what]) => {
    const value = rf[key];
    if (typeof value !== 'number') {
      return [];
    }
    const how = measured === undefined ? 'measured' : measured.includes(key as never) ? 'measured' : 'given';
    const rate = key === 'peak_bytes_per_s' ? `${fmt(value / 1e9)} GB/s` : flopsRate(value);
    return [`${rate} ${what} (${how})`];
  });
  const low = dtype === 'bfloat16' && typeof rf.peak_flops_bf16 === 'number';
  const applies = low ? (rf.peak_flops_bf16 as number) : rf.peak_flops;
  return (
    `roofline: the least time this work can take on this machine (XLA's count of its flops and bytes at the ` +
    `device's peaks: ${peaks.join(', ')}; ${dtype} work, so ${flopsRate(applies)}) over the median; ` +
    "100% is running at the machine's limit."
  );
}

const TRANSFERS =
  'to device / from device: the copies a call of NumPy arrays makes around its run, timed apart (host to ' +
  'device: the arrays it takes; device to host: its results and updated arrays); the median of such a row ' +
  'is the run alone, its inputs already on the device.';

const NOISY =
  'noisy: the interquartile range of the samples is over 10% of the median, so the median is ' +
  'not reliable to better than that (rerun with more samples, or on a quieter machine)';

/** The benchmark: a table whose ratios read "N× faster than X", the roofline explained, what
 * may have skewed the samples, and the variants not measured with their reasons in full. */
function benchPanel(bench: BenchEntry): HTMLElement[] {
  const over = bench.rows.some(r => (r.roofline_fraction ?? 0) > 1);
  const copies = bench.rows.some(r => r.h2d_s !== null && r.h2d_s !== undefined);
  const rows = bench.rows.map(r => [
    r.name + (r.noisy ? ' (noisy)' : ''),
    formatSeconds(r.median_s),
    formatSeconds(r.iqr_s),
    formatSeconds(r.min_s),
    formatSeconds(r.compile_s),
    versus(r.ratio, r.name, bench.reference),
    fmt(r.gflops_per_s),
    fmt(r.gb_per_s),
    r.roofline_fraction === null ? '-' : `${(r.roofline_fraction * 100).toFixed(1)}%${r.roofline_fraction > 1 ? ' *' : ''}`,
    ...(copies ? [transferCell(r.h2d_bytes, r.h2d_s), transferCell(r.d2h_bytes, r.d2h_s)] : [])
  ]);
  const head = [
    'variant',
    'median',
    'IQR',
    'min',
    'compile',
    bench.reference ? `vs ${bench.reference}` : 'vs baseline',
    'GFLOP/s',
    'GB/s',
    'roofline',
    ...(copies ? ['to device', 'from device'] : [])
  ];
  const t = table(head, rows, 'rl-bench');
  bench.rows.forEach((r, i) => {
    if (r.noisy) {
      const tr = t.tBodies[0].rows[i];
      tr.classList.add('rl-noisy');
      tr.title = NOISY;
    }
  });
  const out: HTMLElement[] = [el('h4', '', `Benchmark on ${bench.device}`), t];
  const rf = bench.roofline;
  if (rf) {
    out.push(el('p', 'rl-note rl-roofline-note', rooflineNote(rf, bench.compute_dtype ?? 'float32')));
  }
  if (over) {
    out.push(
      el(
        'p',
        'rl-note rl-roofline-over',
        '* over 100%: faster than that least time, so the estimate is low here: the peak bandwidth is measured ' +
          'on a copy far larger than the caches while these inputs stay in cache, and XLA counts the bytes of ' +
          'each op as if nothing stayed in registers or cache between ops.'
      )
    );
  }
  if (bench.rows.some(r => r.noisy)) {
    out.push(el('p', 'rl-note rl-noisy-note', `(noisy) ${NOISY}.`));
  }
  if (copies) {
    out.push(el('p', 'rl-note rl-transfers-note', TRANSFERS));
  }
  for (const caveat of bench.caveats ?? []) {
    out.push(el('p', 'rl-note rl-caveat', caveat));
  }
  const skipped = Object.entries(bench.skipped ?? {});
  if (skipped.length) {
    const list = el('ul', 'rl-skipped');
    for (const [name, why] of skipped) {
      const li = el('li');
      li.append(el('b', '', name), document.createTextNode(`: ${why}`));
      list.appendChild(li);
    }
    out.push(el('p', 'rl-note', 'Not measured:'), list);
  }
  return out;
}

/** One line for the first tab: each preset's median and how it compares with the baseline. */
export function benchSummary(payload: ExplorerPayload): HTMLElement | null {
  const bench = payload.bench;
  const presets = bench?.rows?.filter(r => r.kind === 'preset') ?? [];
  if (!bench || !presets.length) {
    return null;
  }
  const parts = presets.map(r => {
    const vs = versus(r.ratio, r.name, bench.reference);
    return `${r.name}: ${formatSeconds(r.median_s)}${vs === '-' ? '' : `, ${vs}`}${r.noisy ? ' (noisy)' : ''}`;
  });
  const line = el('div', 'rl-note', `Benchmark on ${bench.device} · ${parts.join(' · ')} (details in the timing tab)`);
  return line;
}

/** Compile and run times, per-stage times as bars, and the benchmark table when present. */
export function timingPanel(payload: ExplorerPayload): HTMLElement {
  const node = el('div', 'rl-timing');
  node.appendChild(table(['what', 'time'], runRows(payload), 'rl-kv rl-run'));
  const slowest = Math.max(1e-12, ...payload.stages.map(s => s.seconds));
  const bars = el('div', 'rl-bars');
  for (const s of payload.stages) {
    const row = el('div', 'rl-bar-row');
    const bar = el('span', 'rl-bar');
    bar.style.width = `${(s.seconds / slowest) * 100}%`;
    row.append(el('span', 'rl-bar-label', `${s.index} ${s.name}`), el('span', 'rl-bar-track'), el('span', 'rl-num', formatSeconds(s.seconds)));
    row.children[1].appendChild(bar);
    bars.appendChild(row);
  }
  node.append(el('h4', '', 'Time per stage'), bars);
  if (payload.bench && payload.bench.rows?.length) {
    node.append(...benchPanel(payload.bench));
  }
  return node;
}

/** Linear arguments, linear results and static arguments of the call. */
export function signaturePanel(payload: ExplorerPayload): HTMLElement {
  const sig = payload.signature;
  const name = (path: string) => pyName(sig, path);
  const node = el('div', 'rl-signature');
  const marks = (parts: [boolean, string][]) => parts.filter(([on]) => on).map(([, m]) => m).join(', ');
  node.appendChild(
    table(
      ['arg', 'name', 'path', 'type', 'marks'],
      sig.args.map(a => [`%arg${a.index}`, name(a.path), a.path, a.type, marks([[a.mutated, 'mutated'], [a.donated, 'donated']])])
    )
  );
  node.appendChild(
    table(
      ['result', 'name', 'path', 'type', 'marks'],
      sig.results.map(r => [
        r.index === null ? '-' : String(r.index),
        name(r.path),
        r.path,
        r.type,
        marks([
          [r.preserved_from !== null, `alias of ${nameAndPath(sig, r.preserved_from ?? '')}`],
          [
            r.preserved_from === null && (r.preserved_after ?? null) !== null,
            `preserved after the pipeline: ${nameAndPath(sig, r.preserved_after ?? '')} (traced as computed)`
          ],
          [r.writes_back !== null, `written back to ${nameAndPath(sig, r.writes_back ?? '')}`],
          [r.constant ?? false, 'constant, computed while tracing']
        ])
      ])
    )
  );
  if (sig.skipped.length) {
    node.appendChild(table(['static argument', 'path', 'value'], sig.skipped.map(([p, v]) => [name(p), p, v])));
  }
  return node;
}
