// What verification and bisection found, as the explorer shows them: the stage list's compile,
// run and error cells, the note naming the first stage that went wrong or got slower, and the
// culprit a bisection found (live widget).

import { el, formatSeconds } from './dom';

/** A note written for the Python API (`exact=True`) as the live explorer says it: its
 * "Reactant exact" box does what the argument does. */
export function forLiveExplorer(text: string): string {
  return text.replace(/\bexact=True\b/g, 'ticking “Reactant exact” above');
}
import type { BisectEntry, StageCheckEntry, VerificationEntry } from './types';

export const VERIFY_HEADS: [string, string][] = [
  ['XLA', 'XLA compile time of the stage’s module'],
  ['run', 'median run time of the stage’s executable alone'],
  ['error', 'largest difference from the reference (ok: within the tolerance)']
];

const num = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toPrecision(2));

/** The row classes of a stage: the first that went wrong, the first that got slower. */
export function verifyClasses(v: VerificationEntry, index: number): string[] {
  return [
    ...(v.first_wrong === index ? ['rl-first-wrong'] : []),
    ...(v.first_slower === index ? ['rl-first-slower'] : [])
  ];
}

/** Why a stage is marked, in words (the row's tooltip and the note). */
export function checkReason(v: VerificationEntry, c: StageCheckEntry, tolerance = true): string {
  if (c.error) {
    return c.error;
  }
  const parts: string[] = [];
  if (c.ok === false) {
    const rule = tolerance ? `; tolerance: ${v.tolerance}` : '';
    parts.push(`off ${v.reference_label}: ${c.first_bad ?? 'values differ'} (max abs ${num(c.max_abs)}, max rel ${num(c.max_rel)}${rule})`);
  } else if (c.ok) {
    parts.push(`matches ${v.reference_label} (max abs ${num(c.max_abs)}, max rel ${num(c.max_rel)})`);
  }
  if (c.slower) {
    parts.push(`more than ${v.slower_factor}× slower than the fastest earlier stage`);
  }
  if (c.same_as !== null) {
    parts.push(`same module as stage ${c.same_as}`);
  }
  return parts.join('; ');
}

/** The three cells of one stage: XLA compile, run time, error or ok. */
export function verifyCells(v: VerificationEntry, c: StageCheckEntry | undefined): HTMLTableCellElement[] {
  if (!c) {
    return [el('td', 'rl-num', '-'), el('td', 'rl-num', '-'), el('td', 'rl-verdict', '-')];
  }
  const run = el('td', `rl-num${c.slower ? ' rl-slower' : ''}`, formatSeconds(c.run_seconds));
  let verdict: HTMLTableCellElement;
  if (c.error) {
    verdict = el('td', 'rl-verdict rl-bad', 'failed');
  } else if (c.ok === false) {
    verdict = el('td', 'rl-verdict rl-bad', `✗ ${num(c.max_abs)}`);
  } else if (c.ok) {
    verdict = el('td', 'rl-verdict rl-ok', c.max_abs ? `ok ${num(c.max_abs)}` : 'ok');
  } else {
    verdict = el('td', 'rl-verdict', '-');
  }
  verdict.title = checkReason(v, c);
  if (c.slower) {
    run.title = `more than ${v.slower_factor}× slower than the fastest earlier stage`;
  }
  return [el('td', 'rl-num', formatSeconds(c.compile_seconds)), run, verdict];
}

/** The note above the stages: what was verified against, and the first stage that went wrong
 * or got slower, with why. */
export function verifyNote(v: VerificationEntry): HTMLElement {
  const node = el('div', 'rl-verify-note');
  const head = el('div', '', `Verified against ${v.reference_label}; run times are medians of ${v.repeat} samples. `);
  const rule = el('span', 'rl-note', `Tolerance: ${v.tolerance}.`);
  head.appendChild(rule);
  node.appendChild(head);
  const at = (i: number | null) => (i === null ? undefined : v.checks.find(c => c.index === i));
  const wrong = at(v.first_wrong);
  const slow = at(v.first_slower);
  if (wrong) {
    node.appendChild(el('div', 'rl-verify-wrong', `First stage that went wrong: ${wrong.index} ${wrong.name}: ${checkReason(v, wrong, false)}`));
  }
  if (slow) {
    node.appendChild(el('div', 'rl-verify-slower', `First stage more than ${v.slower_factor}× slower: ${slow.index} ${slow.name} (${formatSeconds(slow.run_seconds)})`));
  }
  if (!wrong && !slow) {
    const failed = v.checks.filter(c => c.error).length;
    node.appendChild(el('div', 'rl-verify-ok', failed ? `${failed} stage(s) could not run; the others match.` : 'Every stage matches the reference.'));
  }
  return node;
}

function figures(label: string, c: StageCheckEntry | null): (string | number)[] {
  return c === null
    ? [label, '-', '-', '-', '-']
    : [label, formatSeconds(c.compile_seconds), formatSeconds(c.run_seconds), num(c.max_abs), c.error ?? (c.ok === null ? '-' : c.ok ? 'ok' : 'wrong')];
}

/** What a bisection found: the culprit, the figures without and with it, its diff, the
 * reproducer and the log (collapsed). */
export function bisectPanel(b: BisectEntry, live = true): HTMLElement {
  const fine = !b.found && b.regressed === false;
  const node = el('div', `rl-bisect ${b.found ? 'rl-bisect-found' : fine ? 'rl-bisect-fine' : 'rl-bisect-none'}`);
  const what = b.metric === 'result' ? 'the result' : `${b.metric.replace('_', ' ')}${b.threshold ? ` (×${b.threshold})` : ''}`;
  const head = el('div', 'rl-bisect-head');
  head.append(
    el('strong', '', b.found ? `Culprit for ${what}: ` : fine ? `No regression in ${what}: ` : `No single culprit for ${what}: `)
  );
  if (b.found) {
    const culprit = b.patterns.length ? `${b.pass_name ?? '?'}: ${b.patterns.join(', ')}` : (b.pass_name ?? '?');
    head.append(el('code', 'rl-culprit', culprit), document.createTextNode(` (stage ${b.stage ?? '?'}, pass ${b.pass_index ?? '?'})`));
  }
  head.append(el('div', 'rl-note', live ? forLiveExplorer(b.why) : b.why));
  node.appendChild(head);
  if (b.pass_pipeline) {
    const passes = el('details', 'rl-bisect-pipeline');
    passes.append(el('summary', '', 'the pass as it ran'), el('pre', '', b.pass_pipeline));
    node.appendChild(passes);
  }
  if (b.good || b.bad) {
    const t = el('table', 'rl-kv rl-bisect-figures');
    const tr = el('tr');
    for (const h of ['', 'XLA compile', 'run', 'max abs error', `vs ${b.reference}`]) {
      tr.appendChild(el('th', '', h));
    }
    t.createTHead().appendChild(tr);
    const body = t.createTBody();
    for (const row of [figures('without it', b.good), figures('with it', b.bad)]) {
      const r = el('tr');
      row.forEach(c => r.appendChild(el('td', '', String(c))));
      body.appendChild(r);
    }
    node.appendChild(t);
  }
  if (b.diff) {
    const d = el('details', 'rl-bisect-diff');
    d.open = true;
    d.appendChild(el('summary', '', `what the culprit changed: ${b.diff_summary ?? ''}`));
    const pre = el('pre', 'rl-diff-text');
    for (const line of b.diff.split('\n')) {
      const cls = line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : '';
      pre.appendChild(el('span', cls, `${line}\n`));
    }
    d.appendChild(pre);
    node.appendChild(d);
  }
  if (b.reproducer) {
    node.appendChild(el('div', 'rl-note', `reproducer: ${b.reproducer}`));
  }
  const log = el('details', 'rl-bisect-log');
  log.appendChild(el('summary', '', `log: ${b.tests} tests in ${b.seconds.toFixed(1)} s`));
  log.appendChild(el('pre', '', b.log.join('\n')));
  node.appendChild(log);
  return node;
}
