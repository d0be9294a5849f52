// Live controls (re-run with another preset, granularity, no_nan or a pass pipeline, without
// re-running the cell; verify every stage; find the culprit pass of a wrong result or a slowdown)
// and the status line that shows a run's progress or error.

import { button, el } from './dom';
import type { ExplorerCommand, ExplorerPayload, ExplorerStatus } from './types';

export class Controls {
  readonly node: HTMLFormElement;
  private readonly preset: HTMLSelectElement;
  private readonly granularity: HTMLSelectElement;
  private readonly noNan: HTMLInputElement;
  private readonly exact: HTMLInputElement;
  private readonly pipeline: HTMLInputElement;
  private readonly run: HTMLButtonElement;
  private readonly verify: HTMLButtonElement;
  private readonly metric: HTMLSelectElement;
  private readonly bisect: HTMLButtonElement;

  constructor(send: (cmd: ExplorerCommand) => void) {
    this.node = el('form', 'rl-controls');
    this.preset = el('select', 'rl-preset');
    this.preset.setAttribute('aria-label', 'optimize preset');
    this.granularity = el('select', 'rl-granularity');
    this.granularity.setAttribute('aria-label', 'granularity');
    for (const g of ['stage', 'pass']) {
      this.granularity.appendChild(new Option(`by ${g}`, g));
    }
    this.noNan = el('input', 'rl-no-nan');
    this.noNan.type = 'checkbox';
    this.exact = el('input', 'rl-exact');
    this.exact.type = 'checkbox';
    this.pipeline = el('input', 'rl-pipeline');
    this.pipeline.type = 'text';
    this.pipeline.placeholder = 'or a pass pipeline, e.g. inline,canonicalize,cse';
    this.pipeline.setAttribute('aria-label', 'pass pipeline');
    this.pipeline.title = 'a pass pipeline to run instead of the preset: Enter re-runs';
    // JupyterLab's notebook shortcuts (Enter: edit the cell) would take Enter from the field
    // before the form sees it: keys typed here are the field's.
    this.pipeline.dataset.lmSuppressShortcuts = 'true';
    // Submitted here, not by the browser's implicit submission, which a notebook output does
    // not always get (the page may cancel the key's later events).
    this.pipeline.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' && !ev.isComposing && !this.run.disabled) {
        ev.preventDefault();
        this.node.requestSubmit(this.run);
      }
    });
    this.pipeline.addEventListener('input', () => {
      this.preset.disabled = this.pipeline.value.trim() !== '';
    });
    this.run = button('re-run', () => undefined, 'rl-rerun');
    this.run.type = 'submit';
    const noNan = el('label', '', ' no_nan');
    noNan.prepend(this.noNan);
    const exact = el('label', '', ' Reactant exact');
    exact.prepend(this.exact);
    exact.title =
      "run Reactant's enzyme-hlo pattern list untouched (by default the patterns measured wrong, crashing or slow here are left out)";
    this.verify = button('verify', () => send({ command: 'verify' }), 'rl-verify-btn');
    this.verify.title = 'compile, run and time every stage on the example inputs, and compare each with the reference';
    this.metric = el('select', 'rl-metric');
    this.metric.setAttribute('aria-label', 'what the culprit breaks');
    for (const [value, label] of [
      ['result', 'wrong result'],
      ['runtime', 'slower run'],
      ['compile_time', 'slower compile']
    ]) {
      this.metric.appendChild(new Option(label, value));
    }
    this.bisect = button(
      'find culprit',
      () => send({ command: 'bisect', metric: this.metric.value as 'result' | 'runtime' | 'compile_time' }),
      'rl-bisect-btn'
    );
    this.bisect.title = 'bisect the passes for the one that makes this go wrong';
    const tools = el('span', 'rl-tools');
    tools.append(this.verify, this.metric, this.bisect);
    this.node.append(
      el('span', 'rl-label', 'optimize'),
      this.preset,
      this.granularity,
      noNan,
      exact,
      this.pipeline,
      this.run,
      tools
    );
    this.node.addEventListener('submit', ev => {
      ev.preventDefault();
      const pipeline = this.pipeline.value.trim();
      send({
        command: 'rerun',
        optimize: this.preset.value,
        granularity: this.granularity.value as 'stage' | 'pass',
        no_nan: this.noNan.checked,
        exact: this.exact.checked,
        pipeline: pipeline || null
      });
    });
  }

  /** Reflect what the payload was made with; the presets offered are the payload's. */
  sync(payload: ExplorerPayload): void {
    const m = payload.meta;
    const presets = m.presets ?? [];
    const offered = Array.from(this.preset.options, o => o.value);
    if (offered.join('\n') !== presets.join('\n')) {
      this.preset.replaceChildren(...presets.map(p => new Option(p, p)));
    }
    if (presets.includes(m.optimize)) {
      this.preset.value = m.optimize;
    }
    this.granularity.value = m.granularity === 'pass' ? 'pass' : 'stage';
    if (typeof m.no_nan === 'boolean') {
      this.noNan.checked = m.no_nan;
    }
    if (typeof m.exact === 'boolean') {
      this.exact.checked = m.exact;
    }
  }

  setBusy(busy: boolean): void {
    for (const b of [this.run, this.verify, this.bisect]) {
      b.disabled = busy;
    }
  }
}

export class StatusLine {
  readonly node: HTMLDivElement;
  private readonly text: HTMLSpanElement;
  private readonly bar: HTMLProgressElement;

  constructor() {
    this.node = el('div', 'rl-status');
    this.node.setAttribute('role', 'status');
    this.bar = el('progress', 'rl-progress');
    this.bar.max = 1;
    this.text = el('span', 'rl-status-text');
    this.node.append(this.bar, this.text);
    this.set({ state: 'idle', message: '', progress: null });
  }

  set(status: ExplorerStatus): void {
    this.node.dataset.state = status.state;
    this.text.textContent = status.message ?? '';
    this.node.hidden = status.state === 'idle' && !status.message;
    this.bar.hidden = status.state !== 'running';
    if (typeof status.progress === 'number') {
      this.bar.value = Math.min(1, Math.max(0, status.progress));
    } else {
      this.bar.removeAttribute('value');
    }
  }
}
