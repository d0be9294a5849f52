// The "LLVM IR / asm" tab: the kernels XLA:CPU compiled the optimized HLO into, each with the
// fusion it computes and the Python lines that fusion came from (the optimized HLO's graph), and
// the chosen kernel's LLVM IR or assembly. The payload keeps the code of kernels up to a budget
// (`xla.code`); a live explorer asks the kernel for a text left out, a saved one says how to get
// it.

import { button, el } from './dom';
import { fileName } from './textops';
import { TextStore } from './texts';
import { TextView } from './textview';
import type { ExplorerPayload, GraphModel, XlaCode } from './types';

export type CodeKind = 'llvm_ir' | 'assembly';

const LABEL: Record<CodeKind, string> = { llvm_ir: 'LLVM IR', assembly: 'assembly' };
/** The Python API call that gives a kernel's text of each kind. */
const API: Record<CodeKind, string> = { llvm_ir: 'llvm_ir', assembly: 'assembly' };

/** One kernel as the tab lists it. */
export interface KernelRow {
  name: string;
  /** The HLO instruction it computes (`fusion`, `copy`), '' when the graph does not show it. */
  op: string;
  /** What the fusion was made from (`from k.py:31: stablehlo.add ×4`), '' when not known. */
  from: string;
  /** Ids of its texts in the payload's `texts`; null: left out. */
  llvm_ir: number | null;
  assembly: number | null;
}

/** The kernel XLA:CPU emitted for the HLO instruction `ssa` (`%name`) among `kernels`: the one
 * of its name, or, for a small call it compiled whole (`xla_cpu_small_call`), `name_computation`;
 * null when none. */
export function kernelNamed(ssa: string | undefined, kernels: ReadonlySet<string>): string | null {
  const name = (ssa ?? '').split(',')[0].trim().replace(/^%/, '');
  if (!name) {
    return null;
  }
  return kernels.has(name) ? name : kernels.has(`${name}_computation`) ? `${name}_computation` : null;
}

/** The graph model of the optimized HLO (XLA's last stage), if the payload holds one. */
function hloModel(payload: ExplorerPayload): GraphModel | undefined {
  const last = payload.stages.length - 1;
  return payload.graphs.find(g => g.stages.includes(last) && g.model)?.model;
}

/** The payload's kernels in the order the optimized HLO computes them (kernels the graph does
 * not show after, by name), each with what it computes. */
export function kernelRows(payload: ExplorerPayload): KernelRow[] {
  const code: XlaCode | undefined = payload.xla?.code;
  if (!code) {
    return [];
  }
  const nodes = hloModel(payload)?.nodes ?? [];
  const names = new Set(code.kernels.map(k => k.name));
  const at = new Map<string, number>();
  nodes.forEach((n, i) => {
    const kernel = n.kind === 'op' ? kernelNamed(n.ssa, names) : null;
    if (kernel !== null && !at.has(kernel)) {
      at.set(kernel, i);
    }
  });
  const rows = code.kernels.map(k => {
    const n = at.has(k.name) ? nodes[at.get(k.name) as number] : undefined;
    return { name: k.name, op: n?.op ?? '', from: n?.title ?? '', llvm_ir: k.llvm_ir, assembly: k.assembly };
  });
  const order = (r: KernelRow) => at.get(r.name) ?? Number.MAX_SAFE_INTEGER;
  return rows.sort((a, b) => order(a) - order(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The kernel shown first: the first true fusion (XLA names it `..._fusion`), else the first. */
export function firstKernel(rows: readonly KernelRow[]): string | null {
  return (rows.find(r => /fusion(\.\d+)?$/.test(r.name)) ?? rows[0])?.name ?? null;
}

/** Why kernel `name`'s text of kind `what` is not shown, for a saved explorer (null: it is in
 * the payload). */
export function missingNote(code: XlaCode, row: KernelRow, what: CodeKind): string | null {
  if (row[what] !== null) {
    return null;
  }
  if (what === 'assembly' && code.assembly_error) {
    return `No assembly: ${code.assembly_error}.`.replace(/\.\.$/, '.');
  }
  const kib = Math.round(code.budget / 1024);
  return (
    `The ${LABEL[what]} of ${row.name} was not saved with this output: it keeps at most ${kib} KiB of ` +
    "the kernels' code, compressed (each kernel's LLVM IR first, then the assemblies). A live explorer " +
    `(run the cell again, with its kernel) shows it; in Python: ex.xla.${API[what]}('${row.name}').`
  );
}

export class CodeView {
  readonly node: HTMLDivElement;
  private readonly intro = el('p', 'rl-note rl-code-intro');
  private readonly list = el('div', 'rl-kernel-list');
  private readonly kinds: Record<CodeKind, HTMLButtonElement>;
  private readonly note = el('p', 'rl-note rl-code-note');
  private readonly views: Record<CodeKind, TextView> = { llvm_ir: new TextView('llvm'), assembly: new TextView('asm') };
  private payload: ExplorerPayload | null = null;
  private store: TextStore | null = null;
  private rows: KernelRow[] = [];
  private kernel: string | null = null;
  private what: CodeKind = 'llvm_ir';
  /** Texts the kernel sent (kernel + kind), and the requests not answered yet or failed. */
  private readonly fetched = new Map<string, string>();
  private readonly asked = new Set<string>();
  private readonly failed = new Map<string, string>();

  /** `onFetch` is set live only: it asks the kernel for a text the payload left out. */
  constructor(private readonly onFetch?: (kernel: string, what: CodeKind) => void) {
    this.node = el('div', 'rl-kernel-code');
    const bar = el('div', 'rl-toolbar rl-code-bar');
    this.kinds = {
      llvm_ir: button('LLVM IR', () => this.pick(this.kernel, 'llvm_ir'), 'rl-code-kind rl-code-llvm'),
      assembly: button('assembly', () => this.pick(this.kernel, 'assembly'), 'rl-code-kind rl-code-asm')
    };
    this.kinds.llvm_ir.title = 'the optimized LLVM IR XLA:CPU generated for the kernel';
    this.kinds.assembly.title = 'the machine code XLA:CPU compiled the kernel to, disassembled (objdump)';
    bar.append(el('span', 'rl-gp-key', 'show'), this.kinds.llvm_ir, this.kinds.assembly);
    this.node.append(this.intro, this.list, bar, this.note, this.views.llvm_ir.node, this.views.assembly.node);
  }

  /** Whether `payload` has kernels' code to show (the tab is offered only then). */
  static has(payload: ExplorerPayload | null): boolean {
    return !!payload?.xla?.code?.kernels.length;
  }

  /** The names of the kernels of `payload` (the graph's fusion panels link to them). */
  static kernels(payload: ExplorerPayload | null): Set<string> {
    return new Set((payload?.xla?.code?.kernels ?? []).map(k => k.name));
  }

  /** Show `payload`'s kernels (texts from `store`), the chosen one's code. */
  show(payload: ExplorerPayload, store: TextStore): Promise<void> {
    if (payload !== this.payload) {
      this.payload = payload;
      this.rows = kernelRows(payload);
      this.fetched.clear();
      this.asked.clear();
      this.failed.clear();
      if (!this.rows.some(r => r.name === this.kernel)) {
        this.kernel = firstKernel(this.rows);
      }
      this.fillList();
    }
    this.store = store;
    const last = payload.stages.length - 1;
    const n = this.rows.length;
    this.intro.textContent = n
      ? `XLA:CPU compiled the optimized HLO (stage ${last}) into ${n} kernel${n > 1 ? 's' : ''}, each named ` +
        'after the fusion or instruction it computes: pick one for its LLVM IR or its assembly (in the graph ' +
        `of stage ${last}, a fusion's panel links here too).`
      : 'XLA emitted no CPU kernels for this explorer.';
    return this.draw();
  }

  /** Choose kernel `kernel`'s code of kind `what`, shown by the next `show`. */
  select(kernel: string, what: CodeKind): void {
    this.kernel = kernel;
    this.what = what;
    this.markList();
  }

  /** Show kernel `kernel`'s code of kind `what` (null kernel: the one shown). */
  private pick(kernel: string | null, what: CodeKind): Promise<void> {
    if (kernel !== null && this.rows.some(r => r.name === kernel)) {
      this.kernel = kernel;
    }
    this.what = what;
    this.markList();
    return this.draw();
  }

  /** A text the kernel sent. */
  received(kernel: string, what: CodeKind, text: string): void {
    this.answered(kernel, what, this.fetched, text);
  }

  /** The kernel's answer to a request was an error. */
  refused(kernel: string, what: CodeKind, message: string): void {
    this.answered(kernel, what, this.failed, message);
  }

  /** A request answered: no longer asked, its answer kept in `into`, redrawn if shown. */
  private answered(kernel: string, what: CodeKind, into: Map<string, string>,
                   value: string): void {
    const key = `${what} ${kernel}`;
    this.asked.delete(key);
    into.set(key, value);
    if (kernel === this.kernel && what === this.what) {
      void this.draw();
    }
  }

  dispose(): void {
    this.views.llvm_ir.dispose();
    this.views.assembly.dispose();
  }

  private fillList(): void {
    const t = el('table', 'rl-kernel-table');
    const head = el('tr');
    for (const h of ['kernel', 'computes', 'made from']) {
      head.appendChild(el('th', '', h));
    }
    const thead = el('thead');
    const body = el('tbody');
    thead.appendChild(head);
    t.append(thead, body);
    for (const r of this.rows) {
      const tr = el('tr');
      tr.dataset.kernel = r.name;
      const pick = button(r.name, () => void this.pick(r.name, this.what), 'rl-kernel-pick');
      pick.title = `show the code of ${r.name}`;
      const name = el('td');
      name.appendChild(pick);
      tr.append(name, el('td', 'rl-kernel-op', r.op || '-'), el('td', 'rl-kernel-from', r.from || '-'));
      body.appendChild(tr);
    }
    this.list.replaceChildren(t);
    this.list.hidden = !this.rows.length;
    this.markList();
  }

  private markList(): void {
    for (const tr of Array.from(this.list.querySelectorAll('tr'))) {
      const on = (tr as HTMLElement).dataset.kernel === this.kernel;
      tr.classList.toggle('selected', on);
      tr.querySelector('button')?.setAttribute('aria-pressed', String(on));
      const list = this.list;
      if (on && list.clientHeight) {
        // the chosen kernel in view (below the sticky head), without scrolling the page
        const head = list.querySelector('thead')?.clientHeight ?? 0;
        const [r, l] = [tr.getBoundingClientRect(), list.getBoundingClientRect()];
        if (r.top < l.top + head || r.bottom > l.bottom) {
          list.scrollTop += r.top - l.top - head;
        }
      }
    }
    for (const what of ['llvm_ir', 'assembly'] as CodeKind[]) {
      this.kinds[what].classList.toggle('active', what === this.what);
      this.kinds[what].setAttribute('aria-pressed', String(what === this.what));
    }
  }

  /** The chosen text: from the payload, from the kernel, or why it is not there. */
  private async draw(): Promise<void> {
    const { payload, store, kernel, what } = this;
    const code = payload?.xla?.code;
    const row = this.rows.find(r => r.name === kernel);
    this.views.llvm_ir.node.hidden = this.views.assembly.node.hidden = true;
    this.note.hidden = true;
    this.note.classList.remove('rl-error-text');
    if (!payload || !store || !code || !row) {
      return;
    }
    const view = this.views[what];
    const heading = `${LABEL[what]} of kernel ${row.name}`;
    const file = fileName([payload.meta.function, row.name], what === 'llvm_ir' ? 'll' : 's');
    const key = `${what} ${row.name}`;
    const id = row[what];
    if (id !== null) {
      view.node.hidden = false;
      return view.show(store, id, heading, file);
    }
    const sent = this.fetched.get(key);
    if (sent !== undefined) {
      view.node.hidden = false;
      const one = new TextStore([{ id: 0, encoding: 'plain', data: sent, lines: sent.split('\n').length, chars: sent.length }]);
      return view.show(one, 0, heading, file);
    }
    const failed = this.failed.get(key);
    const saved = missingNote(code, row, what) ?? '';
    if (failed !== undefined || !this.onFetch || (what === 'assembly' && code.assembly_error)) {
      this.say(failed ?? saved, failed !== undefined);
      return;
    }
    this.say(`Asking the kernel for the ${LABEL[what]} of ${row.name} (not saved with this output)…`, false);
    if (!this.asked.has(key)) {
      this.asked.add(key);
      this.onFetch(row.name, what);
    }
  }

  private say(text: string, error: boolean): void {
    this.note.textContent = text;
    this.note.hidden = false;
    this.note.classList.toggle('rl-error-text', error);
  }
}
