// The stage list: one row per stage (or pass) with its changed marker, op count and change,
// and time (and, when verified, XLA compile, run time and error); the stage the selected one is
// compared with is marked; a toggle hides the stages that left the module unchanged.
// A listbox for assistive technology: one tab stop (the table) whose active option is the
// selected stage; Up / Down (or k / j), Home and End move the selection.

import { el, formatSeconds } from './dom';
import { hasModifier, stageKeyMove } from './keys';
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

let lists = 0;

export class StageList {
  readonly node: HTMLDivElement;
  private readonly table: HTMLTableElement;
  private readonly idPrefix = `rl-stages-${++lists}`;
  private shown: StageEntry[] = [];
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
    this.table = t;
    this.head = el('tr');
    // The options' labels say what each column does: the head is for the eye only.
    t.createTHead().appendChild(this.head);
    t.tHead?.setAttribute('aria-hidden', 'true');
    this.body = t.createTBody();
    this.body.setAttribute('role', 'presentation');
    t.tabIndex = 0;
    t.setAttribute('role', 'listbox');
    t.setAttribute('aria-label', 'stages (Up / Down or k / j, Home, End move)');
    t.addEventListener('keydown', ev => {
      const move = hasModifier(ev) ? null : stageKeyMove(ev.key);
      if (!move) {
        return;
      }
      ev.preventDefault();
      ev.stopPropagation();
      if (move.kind === 'step') {
        events.onStep(move.delta);
      } else {
        const s = this.shown[move.last ? this.shown.length - 1 : 0];
        if (s) {
          events.onSelect(s.index);
        }
      }
    });
    this.node.append(bar, t);
  }

  render(
    stages: readonly StageEntry[],
    selected: number,
    hideUnchanged: boolean,
    verification?: VerificationEntry,
    base: number | null = null
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
    this.shown = shown;
    const changed = stages.filter(s => s.index > 0 && s.changed).length;
    this.count.textContent = `(${changed} of ${Math.max(0, stages.length - 1)} changed the module)`;
    const rows = shown.map(s => {
      const tr = el('tr', s.changed || s.index === 0 ? 'changed' : 'unchanged');
      tr.dataset.stage = String(s.index);
      tr.id = `${this.idPrefix}-${s.index}`;
      tr.setAttribute('role', 'option');
      tr.setAttribute('aria-selected', String(s.index === selected));
      if (s.index === selected) {
        tr.classList.add('selected');
      }
      const prevOps = s.index > 0 ? stages[s.index - 1].ops : s.ops;
      const delta = s.ops - prevOps;
      const name = el('td', 'rl-stage-name');
      const mark = el('span', s.changed ? 'rl-mark-changed' : 'rl-mark-same', s.changed ? '●' : '○');
      mark.title = s.changed ? 'changed the module' : 'left the module unchanged';
      name.append(mark, document.createTextNode(` ${s.name}`));
      name.title = s.name;
      if (s.index === base) {
        tr.classList.add('rl-compared');
        const tag = el('span', 'rl-compared-mark', 'base');
        tag.title = `the diff compares stage ${selected} with this stage`;
        name.insertBefore(tag, mark.nextSibling);
      }
      if (s.group && s.group !== s.name) {
        name.appendChild(el('span', 'rl-group', ` ${s.group}`));
      }
      if (s.unavailable) {
        const warn = el('span', 'rl-unavailable', ' ⚠');
        warn.title = s.unavailable;
        name.appendChild(warn);
      }
      if (s.pipeline && s.pipeline !== s.name) {
        name.title = `${s.name}\n${s.pipeline}`;
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
          name.insertBefore(badge, mark.nextSibling); // before the name, which may wrap
        }
      }
      tr.setAttribute(
        'aria-label',
        [
          `stage ${s.index}: ${s.name}`,
          s.changed || s.index === 0 ? 'changed the module' : 'left the module unchanged',
          `${s.ops} ops${delta ? ` (${delta > 0 ? '+' : ''}${delta})` : ''}`,
          formatSeconds(s.seconds),
          ...(s.index === base ? ['compared with the selected stage'] : []),
          ...(s.unavailable ? [s.unavailable] : []),
          ...Array.from(tr.querySelectorAll<HTMLElement>('.rl-verify-mark, .rl-verdict'), e => e.title || e.textContent || '')
        ]
          .filter(Boolean)
          .join(', ')
      );
      tr.addEventListener('click', () => this.events.onSelect(s.index));
      return tr;
    });
    const focused = this.table.ownerDocument.activeElement === this.table;
    this.body.replaceChildren(...rows);
    const current = rows.find(r => r.dataset.stage === String(selected));
    if (current) {
      this.table.setAttribute('aria-activedescendant', current.id);
      if (focused) {
        current.scrollIntoView({ block: 'nearest' });
      }
    } else {
      this.table.removeAttribute('aria-activedescendant');
    }
  }
}
