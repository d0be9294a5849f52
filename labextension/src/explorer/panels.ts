// The read-only panes: op metrics across stages, XLA's compile facts, timings (and benchmark
// rows when the payload carries them), and the call's signature.

import { el, formatSeconds, table } from './dom';
import type { ExplorerPayload } from './types';

/** Op counts, one column per stage; a cell that differs from the stage before is marked. */
export function metricsPanel(payload: ExplorerPayload, selected: number): HTMLElement {
  const m = payload.metrics;
  const node = el('div', 'rl-metrics');
  const t = el('table', 'rl-ops');
  const head = el('tr');
  head.appendChild(el('th', 'rl-sticky', 'op'));
  m.stages.forEach((name, i) => {
    const th = el('th', i === selected ? 'selected' : '', String(i));
    th.title = name;
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
  node.append(el('p', 'rl-note', 'Op counts per stage (hover a column head for its name).'), t);
  return node;
}

/** XLA's compile facts; the HLO text goes below in a TextView. */
export function xlaFacts(payload: ExplorerPayload): HTMLElement {
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
  const rows: (string | number)[][] = [
    ...Object.entries(x.cost).map(([k, v]) => [k, Math.round(v).toLocaleString('en-US')]),
    ...Object.entries(x.memory).map(([k, v]) => [k, `${v.toLocaleString('en-US')} bytes`])
  ];
  if (rows.length) {
    node.appendChild(table(['XLA estimate', 'value'], rows, 'rl-kv'));
  }
  return node;
}

function runRows(payload: ExplorerPayload): (string | number)[][] {
  const rows: (string | number)[][] = [];
  const stages = payload.stages;
  rows.push(['trace and lower', formatSeconds(stages[0]?.seconds)]);
  rows.push(['stages (passes)', formatSeconds(stages.slice(1).reduce((t, s) => t + s.seconds, 0))]);
  if (payload.xla) {
    rows.push(['XLA compile', formatSeconds(payload.xla.compile_seconds)]);
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
  const bench = payload.bench;
  if (bench && bench.rows?.length) {
    node.appendChild(el('h4', '', `Benchmark on ${bench.device}`));
    const rows = bench.rows.map(r => [
      r.name + (r.noisy ? ' (noisy)' : ''),
      formatSeconds(r.median_s),
      formatSeconds(r.iqr_s),
      formatSeconds(r.min_s),
      formatSeconds(r.compile_s),
      fmt(r.ratio),
      fmt(r.gflops_per_s),
      fmt(r.gb_per_s),
      r.roofline_fraction === null ? '-' : `${(r.roofline_fraction * 100).toFixed(1)}%`
    ]);
    const head = ['variant', 'median', 'IQR', 'min', 'compile', `ratio / ${bench.reference ?? '-'}`, 'GFLOP/s', 'GB/s', 'roofline'];
    node.appendChild(table(head, rows, 'rl-bench'));
    const skipped = Object.entries(bench.skipped ?? {});
    if (skipped.length) {
      node.appendChild(el('p', 'rl-note', `Skipped: ${skipped.map(([n, w]) => `${n} (${w})`).join('; ')}`));
    }
  }
  return node;
}

/** Linear arguments, linear results and static arguments of the call. */
export function signaturePanel(payload: ExplorerPayload): HTMLElement {
  const sig = payload.signature;
  const node = el('div', 'rl-signature');
  const marks = (parts: [boolean, string][]) => parts.filter(([on]) => on).map(([, m]) => m).join(', ');
  node.appendChild(
    table(
      ['arg', 'path', 'type', 'marks'],
      sig.args.map(a => [`%arg${a.index}`, a.path, a.type, marks([[a.mutated, 'mutated'], [a.donated, 'donated']])])
    )
  );
  node.appendChild(
    table(
      ['result', 'path', 'type', 'marks'],
      sig.results.map(r => [
        r.index === null ? '-' : String(r.index),
        r.path,
        r.type,
        marks([
          [r.preserved_from !== null, `alias of ${r.preserved_from}`],
          [
            r.preserved_from === null && (r.preserved_after ?? null) !== null,
            `preserved after the pipeline: ${r.preserved_after} (traced as computed)`
          ],
          [r.writes_back !== null, `written back to ${r.writes_back}`]
        ])
      ])
    )
  );
  if (sig.skipped.length) {
    node.appendChild(table(['static argument', 'value'], sig.skipped.map(([p, v]) => [p, v])));
  }
  return node;
}
