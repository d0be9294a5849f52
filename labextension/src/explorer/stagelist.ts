// The stage list: one row per stage (or pass) with its changed marker, op count and change,
// and time (and, when verified, XLA compile, run time and error); a toggle hides the stages that
// left the module unchanged.

import { el, formatSeconds } from './dom';
import { visibleStages } from './state';
import type { StageEntry, VerificationEntry } from './types';
import { VERIFY_HEADS, checkReason, verifyCells, verifyClasses } from './verify';

const HEADS: [string, string][] = [
  ['#', 'stage index'],
  ['stage', 'stage or pass'],
  ['ops', 'op count'],
  ['Δ', 'change of the op count'],
  ['time', 'time the stage took']
];

export interface StageListEvents {
  onSelect(stage: number): void;
  onHideUnchanged(hide: boolean): void;
  onStep(delta: 1 | -1): void;
}

export class StageList {
  readonly node: HTMLDivElement;
  private readonly toggle: HTMLInputElement;
  private readonly count: HTMLSpanElement;
  private readonly head: HTMLTableRowElement;
  private readonly body: HTMLTableSectionElement;

  constructor(private readonly events: StageListEvents) {
    this.node = el('div', 'rl-stages');
    const bar = el('label', 'rl-toolbar rl-hide-unchanged');
    this.toggle = el('input');
    this.toggle.type = 'checkbox';
    this.toggle.addEventListener('change', () => events.onHideUnchanged(this.toggle.checked));
    this.count = el('span', 'rl-note');
    bar.append(this.toggle, document.createTextNode(' hide unchanged '), this.count);
    const t = el('table', 'rl-stage-table');
    this.head = el('tr');
    t.createTHead().appendChild(this.head);
    this.body = t.createTBody();
    t.tabIndex = 0;
    t.setAttribute('aria-label', 'stages: arrow keys or j / k move');
    t.addEventListener('keydown', ev => {
      if (['ArrowDown', 'j'].includes(ev.key)) {
        events.onStep(1);
      } else if (['ArrowUp', 'k'].includes(ev.key)) {
        events.onStep(-1);
      } else {
        return;
      }
      ev.preventDefault();
    });
    this.node.append(bar, t);
  }

  render(
    stages: readonly StageEntry[],
    selected: number,
    hideUnchanged: boolean,
    verification?: VerificationEntry
  ): void {
    this.toggle.checked = hideUnchanged;
    this.head.replaceChildren(
      ...[...HEADS, ...(verification ? VERIFY_HEADS : [])].map(([h, title]) => {
        const th = el('th', '', h);
        th.title = title;
        return th;
      })
    );
    const shown = visibleStages(stages, hideUnchanged, selected);
    const changed = stages.filter(s => s.index > 0 && s.changed).length;
    this.count.textContent = `(${changed} of ${Math.max(0, stages.length - 1)} changed the module)`;
    const rows = shown.map(s => {
      const tr = el('tr', s.changed || s.index === 0 ? 'changed' : 'unchanged');
      tr.dataset.stage = String(s.index);
      if (s.index === selected) {
        tr.classList.add('selected');
        tr.setAttribute('aria-selected', 'true');
      }
      const prevOps = s.index > 0 ? stages[s.index - 1].ops : s.ops;
      const delta = s.ops - prevOps;
      const name = el('td', 'rl-stage-name');
      const mark = el('span', s.changed ? 'rl-mark-changed' : 'rl-mark-same', s.changed ? '●' : '○');
      mark.title = s.changed ? 'changed the module' : 'left the module unchanged';
      name.append(mark, document.createTextNode(` ${s.name}`));
      if (s.group && s.group !== s.name) {
        name.appendChild(el('span', 'rl-group', ` ${s.group}`));
      }
      if (s.unavailable) {
        const warn = el('span', 'rl-unavailable', ' ⚠');
        warn.title = s.unavailable;
        name.appendChild(warn);
      }
      if (s.pipeline) {
        name.title = s.pipeline;
      }
      tr.append(
        el('td', 'rl-num', String(s.index)),
        name,
        el('td', 'rl-num', String(s.ops)),
        el('td', `rl-num ${delta > 0 ? 'up' : delta < 0 ? 'down' : ''}`, delta ? `${delta > 0 ? '+' : ''}${delta}` : ''),
        el('td', 'rl-num', formatSeconds(s.seconds))
      );
      if (verification) {
        const check = verification.checks.find(c => c.index === s.index);
        tr.append(...verifyCells(verification, check));
        const marks = verifyClasses(verification, s.index);
        tr.classList.add(...marks);
        if (check && marks.length) {
          const badge = el('span', 'rl-verify-mark', marks.includes('rl-first-wrong') ? ' ✗ first wrong' : ` ${verification.slower_factor}× slower`);
          badge.title = checkReason(verification, check);
          name.insertBefore(badge, mark.nextSibling); // before the name, which may be cut
        }
      }
      tr.addEventListener('click', () => this.events.onSelect(s.index));
      return tr;
    });
    this.body.replaceChildren(...rows);
  }
}
