// A module's text (a stage's IR or XLA's HLO), decoded when first shown, drawn line by line in a
// virtualized list with line numbers and MLIR colours.

import { codeLine, el } from './dom';
import type { TextStore } from './texts';
import { VirtualList } from './virtual';

export class TextView {
  readonly node: HTMLDivElement;
  private readonly head: HTMLDivElement;
  private readonly list: VirtualList;
  private token = 0;

  constructor(private readonly kind: 'mlir' | 'hlo') {
    this.node = el('div', `rl-text rl-text-${kind}`);
    this.head = el('div', 'rl-text-head');
    this.list = new VirtualList('rl-code', () => el('div'));
    this.node.append(this.head, this.list.node);
  }

  /** Show text `id` of `store` under a heading; returns when it is drawn. */
  async show(store: TextStore, id: number, heading: string): Promise<void> {
    const token = ++this.token;
    const count = store.lineCount(id);
    this.head.textContent = `${heading} · ${count.toLocaleString('en-US')} lines`;
    this.node.classList.add('rl-loading');
    let lines: string[];
    try {
      lines = await store.lines(id);
    } catch (err) {
      if (token === this.token) {
        this.node.classList.remove('rl-loading');
        this.list.setRows(0, () => el('div'));
        this.head.textContent = `${heading}: could not decode the text (${String(err)})`;
      }
      return;
    }
    if (token !== this.token) {
      return;
    }
    this.node.classList.remove('rl-loading');
    const highlight = this.kind === 'mlir';
    const digits = String(lines.length).length;
    this.list.setRows(lines.length, i => {
      const row = el('div', 'r');
      row.appendChild(el('span', 'ln', String(i + 1).padStart(digits)));
      row.appendChild(codeLine(lines[i], [], highlight));
      return row;
    });
  }

  dispose(): void {
    this.token++;
    this.list.dispose();
    this.node.remove();
  }
}
