// Live controls (re-run with another preset, granularity, no_nan or a pass pipeline, without
// re-running the cell) and the status line that shows a run's progress or error.

import { button, el } from './dom';
import type { ExplorerCommand, ExplorerPayload, ExplorerStatus } from './types';

export class Controls {
  readonly node: HTMLFormElement;
  private readonly preset: HTMLSelectElement;
  private readonly granularity: HTMLSelectElement;
  private readonly noNan: HTMLInputElement;
  private readonly pipeline: HTMLInputElement;
  private readonly run: HTMLButtonElement;

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
    this.pipeline = el('input', 'rl-pipeline');
    this.pipeline.type = 'text';
    this.pipeline.placeholder = 'or a pass pipeline, e.g. inline,canonicalize,cse';
    this.pipeline.setAttribute('aria-label', 'pass pipeline');
    this.pipeline.addEventListener('input', () => {
      this.preset.disabled = this.pipeline.value.trim() !== '';
    });
    this.run = button('re-run', () => undefined, 'rl-rerun');
    this.run.type = 'submit';
    const noNan = el('label', '', ' no_nan');
    noNan.prepend(this.noNan);
    this.node.append(
      el('span', 'rl-label', 'optimize'),
      this.preset,
      this.granularity,
      noNan,
      this.pipeline,
      this.run
    );
    this.node.addEventListener('submit', ev => {
      ev.preventDefault();
      const pipeline = this.pipeline.value.trim();
      send({
        command: 'rerun',
        optimize: this.preset.value,
        granularity: this.granularity.value as 'stage' | 'pass',
        no_nan: this.noNan.checked,
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
  }

  setBusy(busy: boolean): void {
    this.run.disabled = busy;
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
