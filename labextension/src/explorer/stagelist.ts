// The stage list: one row per stage (or pass) with its changed marker, op count and change,
// and time (and, when verified, XLA compile, run time and error); the stage the selected one is
// compared with is marked; a toggle hides the stages that left the module unchanged.
// A listbox for assistive technology: one tab stop (the table) whose active option is the
// selected stage; Up / Down (or k / j), Home and End move the selection.

import { button, el, formatSeconds } from './dom';
import { hasModifier, stageKeyMove } from './keys';
import { visibleStages } from './state';
import type { StageEntry, VerificationEntry } from './types';
import { VERIFY_HEADS, checkReason, forLiveExplorer, verifyCells, verifyClasses } from './verify';

/** Each distinct note of the stages (`unavailable`: passes or patterns left out or run another
 * way) once, with the stages it applies to, in order. */
export function stageNotes(stages: readonly StageEntry[]): [string, number[]][] {
  const shared = new Map<string, number[]>();
  for (const s of stages) {
    if (s.unavailable) {
      const where = shared.get(s.unavailable);
      if (where) {
        where.push(s.index);
      } else {
        shared.set(s.unavailable, [s.index]);
      }
    }
  }
  return [...shared];
}

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
  /** Show all the list's columns (true), or only the stage (false: a side-by-side diff gets the
   * width). */
  onColumns?(all: boolean): void;
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
  private readonly columns: HTMLButtonElement;

  private readonly notes: HTMLDetailsElement;

  /** `live`: the notes say what the live explorer's controls do (`forLiveExplorer`). */
  constructor(
    private readonly events: StageListEvents,
    private readonly live = false
  ) {
    this.node = el('div', 'rl-stages');
    const bar = el('label', 'rl-toolbar rl-hide-unchanged');
    this.toggle = el('input');
    this.toggle.type = 'checkbox';
    this.toggle.addEventListener('change', () => events.onHideUnchanged(this.toggle.checked));
    this.count = el('span', 'rl-note');
    bar.append(this.toggle, document.createTextNode(' hide unchanged '), this.count);
    this.columns = button('', () => events.onColumns?.(this.node.dataset.narrow === 'true'), 'rl-stage-columns');
    this.columns.hidden = true;
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
    this.notes = el('details', 'rl-stage-notes');
    this.notes.hidden = true;
    this.node.append(el('div', 'rl-stages-bar'), t, this.notes);
    this.node.firstElementChild?.append(bar, this.columns);
  }

  /** The stages' notes, each distinct one once, with the stages it applies to (collapsed under
   * the list; a stage's ⚠ names its note). */
  private showNotes(notes: [string, number[]][], stages: readonly StageEntry[]): void {
    this.notes.hidden = !notes.length;
    if (!notes.length) {
      return;
    }
    const open = this.notes.open;
    const all = [...new Set(notes.flatMap(([, where]) => where))];
    const summary = el('summary', '', `⚠ passes or patterns not run as listed, in stage${all.length > 1 ? 's' : ''} ${all.join(', ')}`);
    summary.title = 'what these stages left out or ran another way (click to read)';
    const list = el('ul');
    notes.forEach(([note, where], k) => {
      const item = el('li');
      const names = where.map(i => `${i} ${stages[i]?.name ?? ''}`.trim()).join(', ');
      item.append(el('span', 'rl-note-where', `⚠${k + 1} stage${where.length > 1 ? 's' : ''} ${names}: `), this.live ? forLiveExplorer(note) : note);
      list.appendChild(item);
    });
    this.notes.replaceChildren(summary, list);
    this.notes.open = open;
  }

  /** Narrow (only the stages' index, name and change: the side-by-side diff gets the width),
   * all columns, or null: the toggle is not offered. */
  setNarrow(narrow: boolean | null): void {
    this.columns.hidden = narrow === null;
    this.node.dataset.narrow = String(narrow === true);
    this.columns.textContent = narrow ? '▸ all columns' : '◂ fewer columns';
    this.columns.title = narrow
      ? 'show every column of the stage list (ops, time and, when verified, XLA compile, run and error)'
      : 'show only the stages, so that the side-by-side diff (or the code) gets the width';
    this.columns.setAttribute('aria-pressed', String(narrow !== true));
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
    const notes = stageNotes(stages);
    const noteOf = new Map(notes.flatMap(([, where], k) => where.map((i): [number, number] => [i, k + 1])));
    this.showNotes(notes, stages);
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
      const note = noteOf.get(s.index);
      if (note !== undefined) {
        const warn = el('span', 'rl-unavailable', ' ⚠');
        warn.appendChild(el('sup', '', String(note)));
        warn.title = `some of this stage's passes or patterns did not run as listed: note ${note} under the stage list`;
        warn.setAttribute('aria-label', `note ${note}`);
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
          ...(note !== undefined ? [`see note ${note} under the stage list`] : []),
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
