// The explorer UI, shared by the JupyterLab MIME renderer (saved outputs, no kernel) and the
// anywidget front end (live: re-runs, any-pair diffs and slices are asked of the kernel).

import { Controls, StatusLine } from './controls';
import { CodeView, type CodeKind } from './codeview';
import { DiffView } from './diffview';
import { button, el } from './dom';
import { GraphView, type RevealRequest } from './graphview';
import { FileTools } from './files';
import { hasModifier, tabKeyTarget } from './keys';
import { benchSummary, metricsPanel, signaturePanel, timingPanel, xlaFacts } from './panels';
import { SourceMap, SourcePanel, type LineSources } from './provenance';
import { modelOfText, valueTitles } from './names';
import { StageList } from './stagelist';
import {
  carryOver,
  compareWith,
  findDiff,
  initialState,
  narrowStages,
  payloadProblem,
  setHideUnchanged,
  step,
  type ExplorerViewState,
  type Tab
} from './state';
import { installStyle } from './style';
import { TextStore } from './texts';
import { fileName } from './textops';
import { TextView } from './textview';
import type {
  BisectEntry,
  DiffEntry,
  ExplorerCommand,
  ExplorerHandle,
  ExplorerOptions,
  ExplorerPayload,
  ExplorerResult,
  ExplorerStatus
} from './types';
import { bisectPanel, verifyNote } from './verify';

export * from './types';

const TABS: [Tab, string][] = [
  ['diff', 'diff'],
  ['ir', 'IR'],
  ['graph', 'graph'],
  ['metrics', 'op metrics'],
  ['xla', 'XLA HLO'],
  ['code', 'LLVM IR / asm'],
  ['timing', 'timing'],
  ['signature', 'signature']
];

let explorers = 0;

type Pending =
  | { kind: 'diff'; before: number; after: number }
  | { kind: 'graph'; stage: number }
  | { kind: 'code'; kernel: string; what: CodeKind };

/** Render the explorer for `payload` into `host`. With `options.onCommand` it is live. */
export function renderExplorer(
  host: HTMLElement,
  payload: ExplorerPayload,
  options: ExplorerOptions = {}
): ExplorerHandle {
  const explorer = new Explorer(host, options);
  explorer.update(payload);
  return explorer;
}

class Explorer implements ExplorerHandle {
  private readonly root: HTMLDivElement;
  private readonly title = el('div', 'rl-title');
  private readonly titleText = el('span', 'rl-title-text');
  private readonly benchLine = el('div', 'rl-bench-summary');
  private readonly payloadFile: FileTools;
  private readonly problem = el('div', 'rl-problem');
  private readonly body = el('div', 'rl-body');
  private readonly status = new StatusLine();
  private readonly verifyBox = el('div', 'rl-verify');
  private readonly bisectBox = el('div', 'rl-bisect-box');
  private readonly controls: Controls | null;
  private readonly stageList: StageList;
  private readonly tabBar = el('div', 'rl-tabs');
  private readonly panel = el('div', 'rl-panel');
  private readonly diffView: DiffView;
  private readonly irView = new TextView('mlir');
  private readonly hloView = new TextView('hlo');
  private readonly graphView: GraphView;
  private readonly codeView: CodeView;
  private payload: ExplorerPayload | null = null;
  private store = new TextStore([]);
  private sources: SourceMap | null = null;
  private picked: number | null = null;
  private readonly sourcePanel = new SourcePanel(line => this.pick(line));
  private state: ExplorerViewState | null = null;
  private liveDiffs: DiffEntry[] = [];
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private graphRequest = 0;

  constructor(
    host: HTMLElement,
    private readonly options: ExplorerOptions
  ) {
    installStyle(host.ownerDocument);
    const live = options.onCommand !== undefined;
    this.root = el('div', `rl-explorer ${live ? 'rl-live' : 'rl-saved'}`);
    this.controls = live ? new Controls(cmd => this.send(cmd)) : null;
    this.payloadFile = new FileTools(
      {
        text: () => JSON.stringify(this.payload, null, 1),
        name: () => fileName([this.payload?.meta.function ?? 'explorer', 'payload'], 'json'),
        what: () => 'the explorer payload',
        type: 'application/json'
      },
      'json'
    );
    this.payloadFile.node.title = 'download everything this explorer shows (the payload, docs/explorer-schema.md) as JSON';
    this.title.append(this.titleText, this.payloadFile.node);
    this.stageList = new StageList({
      onSelect: i => this.select(i),
      onHideUnchanged: hide => this.state && this.payload && this.change(setHideUnchanged(this.payload.stages, this.state, hide)),
      onStep: d => this.state && this.payload && this.select(step(this.payload.stages, this.state, d)),
      onColumns: all => this.change({ allStageColumns: all })
    }, live);
    this.diffView = new DiffView({
      onBase: base => this.change({ base }),
      onLayout: layout => this.change({ layout })
    });
    this.diffView.setSources(stage => this.lineSources(stage));
    this.graphView = new GraphView(
      live ? (stage, compare) => this.requestGraph(stage, compare) : undefined,
      where => this.reveal(where),
      base => this.change({ base }),
      (kernel, what) => this.showKernel(kernel, what)
    );
    this.codeView = new CodeView(live ? (kernel, what) => this.requestCode(kernel, what) : undefined);
    // The tabs (WAI-ARIA tabs pattern): one tab stop, Left / Right / Home / End move and show.
    const ids = `rl-explorer-${++explorers}`;
    this.tabBar.setAttribute('role', 'tablist');
    this.tabBar.setAttribute('aria-label', 'explorer views');
    this.panel.id = `${ids}-panel`;
    this.panel.setAttribute('role', 'tabpanel');
    this.panel.tabIndex = -1;
    for (const [tab, label] of TABS) {
      const b = button(label, () => this.change({ tab }), `rl-tab rl-tab-${tab}`);
      b.setAttribute('role', 'tab');
      b.id = `${ids}-tab-${tab}`;
      b.setAttribute('aria-controls', this.panel.id);
      b.dataset.tab = tab;
      this.tabBar.appendChild(b);
    }
    this.tabBar.addEventListener('keydown', ev => {
      const tabs = (Array.from(this.tabBar.children) as HTMLButtonElement[]).filter(b => !b.hidden);
      const at = tabs.findIndex(b => b === ev.target);
      const to = at < 0 || hasModifier(ev) ? null : tabKeyTarget(ev.key, at, tabs.length);
      if (to === null) {
        return;
      }
      ev.preventDefault();
      ev.stopPropagation();
      tabs[to].focus();
      this.change({ tab: tabs[to].dataset.tab as Tab });
    });
    const main = el('div', 'rl-main');
    main.append(this.tabBar, this.panel);
    this.body.append(this.stageList.node, main);
    this.bisectBox.hidden = true;
    this.root.append(
      this.title,
      this.payloadFile.note,
      this.benchLine,
      ...(this.controls ? [this.controls.node] : []),
      this.status.node,
      this.bisectBox,
      this.problem,
      this.verifyBox,
      this.body
    );
    host.appendChild(this.root);
  }

  update(payload: ExplorerPayload): void {
    const problem = payloadProblem(payload);
    this.problem.textContent = problem ?? '';
    this.problem.hidden = problem === null;
    this.body.hidden = problem !== null;
    this.payloadFile.node.hidden = problem !== null;
    if (problem !== null) {
      this.payload = null;
      this.titleText.textContent = 'reactant_lab explorer';
      this.benchLine.hidden = true;
      return;
    }
    this.payload = payload;
    this.store = new TextStore(payload.texts);
    this.sources = SourceMap.of(payload);
    this.state = this.state ? carryOver(this.state, payload) : initialState(payload);
    const code = CodeView.has(payload);
    for (const b of Array.from(this.tabBar.children) as HTMLElement[]) {
      if (b.dataset.tab === 'code') {
        b.hidden = !code; // only where XLA:CPU emitted kernels
      }
    }
    if (!code && this.state.tab === 'code') {
      this.state = { ...this.state, tab: 'xla' };
    }
    this.liveDiffs = [];
    this.pending.clear();
    const m = payload.meta;
    const versions = Object.entries(m.versions ?? {}).map(([k, v]) => `${k} ${v}`).join(', ');
    this.titleText.replaceChildren(
      el('span', 'rl-fn', m.function),
      el('span', 'rl-note', ` · optimize=${m.optimize} · granularity=${m.granularity} · target=${m.target}` +
        (versions ? ` · ${versions}` : '') + (this.controls ? '' : ' · saved output'))
    );
    this.controls?.sync(payload);
    const bench = benchSummary(payload);
    this.benchLine.replaceChildren(...(bench ? [bench] : []));
    this.benchLine.hidden = !bench;
    const v = payload.verification;
    this.verifyBox.replaceChildren(...(v ? [verifyNote(v)] : []));
    this.verifyBox.hidden = !v;
    void this.render();
  }

  showBisect(entry: BisectEntry | null): void {
    const shown = entry !== null && typeof entry === 'object' && typeof entry.why === 'string';
    this.bisectBox.replaceChildren(...(shown ? [bisectPanel(entry)] : []));
    this.bisectBox.hidden = !shown;
  }

  setStatus(status: ExplorerStatus): void {
    this.status.set(status);
    this.controls?.setBusy(status.state === 'running');
  }

  showResult(kind: string, data: unknown): void {
    const result = data as ExplorerResult;
    const asked = this.pending.get(result?.id);
    if (!asked || !this.payload || result.kind !== kind) {
      return;
    }
    this.pending.delete(result.id);
    if (result.kind === 'diff' && asked.kind === 'diff') {
      this.liveDiffs.push(result.data);
      void this.render();
    } else if (result.kind === 'graph' && asked.kind === 'graph' && result.id === this.graphRequest) {
      this.graphView.showModel(result.data);
    } else if (result.kind === 'code' && asked.kind === 'code') {
      this.codeView.received(asked.kernel, asked.what, result.data.text);
    } else if (result.kind === 'error') {
      const message = String(result.data?.message ?? result.data);
      if (asked.kind === 'code') {
        this.codeView.refused(asked.kernel, asked.what, message);
      } else if (asked.kind === 'graph') {
        this.graphView.showError(message);
      } else {
        this.diffView.showNote(message, 'rl-note rl-error-text');
      }
    }
  }

  dispose(): void {
    this.pending.clear();
    this.diffView.dispose();
    this.irView.dispose();
    this.hloView.dispose();
    this.graphView.dispose();
    this.codeView.dispose();
    this.root.remove();
  }

  private send(cmd: ExplorerCommand): void {
    this.options.onCommand?.(cmd);
  }

  private select(stage: number): void {
    this.change({ stage });
  }

  private change(patch: Partial<ExplorerViewState>): void {
    if (!this.state) {
      return;
    }
    if (patch.stage !== undefined && patch.stage !== this.state.stage) {
      patch.base = this.state.base === patch.stage ? null : this.state.base;
    }
    this.state = { ...this.state, ...patch };
    const start = performance.now();
    void this.render().then(() => {
      if (patch.stage !== undefined) {
        // Visible in the browser's performance tools, and read by the browser tests.
        performance.measure('reactant-lab: stage switch', { start, end: performance.now() });
      }
    });
  }

  private async render(): Promise<void> {
    const { payload, state } = this;
    if (!payload || !state) {
      return;
    }
    this.stageList.render(payload.stages, state.stage, state.hideUnchanged, payload.verification, compareWith(state));
    const narrow = narrowStages(state);
    this.stageList.setNarrow(narrow);
    this.body.classList.toggle('rl-narrow-stages', narrow === true);
    this.body.classList.toggle('rl-sbs-diff', narrow !== null);
    for (const b of Array.from(this.tabBar.children) as HTMLElement[]) {
      const on = b.dataset.tab === state.tab;
      b.classList.toggle('active', on);
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
      if (on) {
        this.panel.setAttribute('aria-labelledby', b.id);
      }
    }
    const stage = payload.stages[state.stage];
    this.panel.dataset.tab = state.tab;
    switch (state.tab) {
      case 'diff':
        this.panel.replaceChildren(...this.sourceNodes(state.stage), this.diffView.node);
        return this.renderDiff(payload, state);
      case 'ir':
        this.panel.replaceChildren(...this.sourceNodes(state.stage), this.irView.node);
        this.irView.setSources(this.lineSources(state.stage));
        this.irView.setNames(valueTitles(payload.signature, modelOfText(payload, state.stage)));
        await this.irView.show(
          this.store,
          stage.text,
          `stage ${stage.index}: ${stage.name}`,
          fileName([payload.meta.function, `stage${stage.index}`, stage.name], 'mlir')
        );
        if (this.picked !== null && this.state === state) {
          this.irView.redraw(true); // the picked line's first op in view
        }
        return;
      case 'graph':
        this.panel.replaceChildren(this.graphView.node);
        this.graphView.show(payload, state.stage, compareWith(state), state.base);
        return;
      case 'metrics':
        this.panel.replaceChildren(metricsPanel(payload, state.stage));
        return;
      case 'xla':
        this.panel.replaceChildren(
          xlaFacts(payload, (kernel, what) => this.showKernel(kernel, what)),
          ...(payload.xla ? [this.hloView.node] : [])
        );
        return payload.xla
          ? this.hloView.show(this.store, payload.xla.hlo, 'XLA optimized HLO', fileName([payload.meta.function, 'xla'], 'hlo'))
          : undefined;
      case 'code':
        this.panel.replaceChildren(this.codeView.node);
        return this.codeView.show(payload, this.store);
      case 'timing':
        this.panel.replaceChildren(timingPanel(payload));
        return;
      case 'signature':
        this.panel.replaceChildren(signaturePanel(payload));
        return;
    }
  }

  /** Where stage `stage`'s ops came from, with the picked line; null without provenance. */
  private lineSources(stage: number): LineSources | null {
    return this.sources ? this.sources.forStage(stage, this.picked, line => this.pick(line)) : null;
  }

  /** The Source list for stage `stage` (none without provenance). */
  private sourceNodes(stage: number): HTMLElement[] {
    if (!this.sources || !this.payload) {
      return [];
    }
    this.sourcePanel.show(this.sources, this.payload.stages.map(s => s.name), stage, this.picked);
    return this.sourcePanel.node.hidden ? [] : [this.sourcePanel.node];
  }

  /** Pick a line of the traced function (null: none): its ops are highlighted in every stage. */
  private pick(line: number | null): void {
    this.picked = line;
    const state = this.state;
    if (!state || !this.payload) {
      return;
    }
    this.sourceNodes(state.stage);
    if (state.tab === 'ir') {
      this.irView.setSources(this.lineSources(state.stage));
      this.irView.redraw(line !== null);
    } else if (state.tab === 'diff') {
      this.diffView.redraw();
    }
  }

  private async renderDiff(payload: ExplorerPayload, state: ExplorerViewState): Promise<void> {
    this.diffView.setToolbar(payload, state);
    const before = compareWith(state);
    if (before === null) {
      this.diffView.showNote('Stage 0 is the traced module: pick another stage, or a stage to compare it with.');
      return;
    }
    const after = state.stage;
    const xla = payload.xla?.passes?.first;
    if (xla !== undefined && before < xla !== after < xla) {
      const [hlo, mlir] = after >= xla ? [after, before] : [before, after];
      this.diffView.showNote(
        `Stage ${hlo} is XLA's HLO and stage ${mlir} StableHLO: two IRs, no line diff. Compare ` +
          `XLA's stages (${xla} on) with each other, the MLIR stages with each other.`
      );
      return;
    }
    const found = findDiff(payload, [...payload.diffs, ...this.liveDiffs], before, after);
    if (found.kind === 'same') {
      this.diffView.showNote(
        `stage ${before} → stage ${after}: no structural change (locations, SSA numbering and ` +
          'attribute alias order are ignored).'
      );
    } else if (found.kind === 'found') {
      await this.diffView.showDiff(this.store, payload, { before, after, entry: found.entry, reversed: found.reversed }, state.layout);
    } else if (this.options.onCommand) {
      this.diffView.showNote(`Computing the diff of stage ${before} → stage ${after}…`);
      const asked = [...this.pending.values()].some(p => p.kind === 'diff' && p.before === before && p.after === after);
      if (!asked) {
        const id = this.nextId++;
        this.pending.set(id, { kind: 'diff', before, after });
        this.send({ command: 'diff', id, before, after });
      }
    } else {
      this.diffView.showNote(
        `The diff of stage ${before} → stage ${after} was not saved with this output (saved outputs keep ` +
          'each stage against the one before and pairs of distinct stages); a live explorer computes any pair.'
      );
    }
  }

  /** The graph's links: show the IR (or the diff) of a stage at an op's line. */
  private reveal(where: RevealRequest): void {
    if (!this.state) {
      return;
    }
    this.state = { ...this.state, tab: where.tab, stage: where.stage };
    void this.render().then(() => {
      if (where.tab === 'ir') {
        this.irView.revealLine(where.line);
      } else {
        this.diffView.revealLine(where.line);
      }
    });
  }

  /** Ask the kernel for stage `stage`'s whole graph model (a module past the payload's cap);
   * with `compare`, that stage's too and the graph diff of the two. */
  private requestGraph(stage: number, compare?: number): void {
    const id = this.nextId++;
    this.graphRequest = id;
    this.pending.set(id, { kind: 'graph', stage });
    this.send(compare === undefined ? { command: 'graph', id, stage } : { command: 'graph', id, stage, compare });
  }

  /** Ask the kernel for a kernel's LLVM IR or assembly (left out of the payload). */
  private requestCode(kernel: string, what: CodeKind): void {
    const id = this.nextId++;
    this.pending.set(id, { kind: 'code', kernel, what });
    this.send({ command: 'code', id, kernel, what });
  }

  /** Show kernel `kernel`'s LLVM IR or assembly in the code tab (the graph's and the XLA tab's
   * links). */
  private showKernel(kernel: string, what: CodeKind): void {
    this.codeView.select(kernel, what);
    this.change({ tab: 'code' });
  }
}
