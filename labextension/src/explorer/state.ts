// The explorer's view state (serializable, next to the logic that reads it): which stage is
// shown, what it is compared with, how diffs are laid out, which stages are listed.

import type { DiffEntry, ExplorerPayload, StageEntry } from './types';

export type Tab = 'diff' | 'ir' | 'graph' | 'metrics' | 'xla' | 'code' | 'timing' | 'signature';
export type Layout = 'side-by-side' | 'unified';

export interface ExplorerViewState {
  /** Index of the selected stage. */
  stage: number;
  /** Stage the selected one is compared with; null: the stage before it. */
  base: number | null;
  layout: Layout;
  hideUnchanged: boolean;
  tab: Tab;
  /** Every column of the stage list beside a side-by-side diff (by default only the stages,
   * so that the diff gets the width). */
  allStageColumns?: boolean;
}

/** Whether the stage list is narrow (the side-by-side diff, or a kernel's code, which no stage
 * selects, gets the width); null where the choice does not apply (other tabs, the unified diff:
 * the list keeps its columns). */
export function narrowStages(state: ExplorerViewState): boolean | null {
  if (state.tab !== 'code' && (state.tab !== 'diff' || state.layout !== 'side-by-side')) {
    return null;
  }
  return !state.allStageColumns;
}

/** Start on the first stage that changed the module (stage 0 when none did). */
export function initialState(payload: ExplorerPayload): ExplorerViewState {
  const first = payload.stages.find(s => s.index > 0 && s.changed);
  return {
    stage: first ? first.index : 0,
    base: null,
    layout: 'side-by-side',
    hideUnchanged: false,
    tab: 'diff'
  };
}

/** The state carried over to a new payload (after a re-run): same stage and base when they
 * still exist, else the new payload's starting stage. */
export function carryOver(state: ExplorerViewState, payload: ExplorerPayload): ExplorerViewState {
  const n = payload.stages.length;
  const start = initialState(payload);
  return {
    ...state,
    stage: state.stage < n ? state.stage : start.stage,
    base: state.base !== null && state.base < n ? state.base : null
  };
}

/** Stages the list shows: all, or (hiding unchanged ones) stage 0, the stages that changed the
 * module, and the selected stage whatever it is. */
export function visibleStages(
  stages: readonly StageEntry[],
  hideUnchanged: boolean,
  selected: number
): StageEntry[] {
  if (!hideUnchanged) {
    return [...stages];
  }
  return stages.filter(s => s.index === 0 || s.changed || s.index === selected);
}

/** The stage to select when the list hides unchanged stages (`hide`): `stage` itself when it is
 * listed, else the nearest listed stage before it (the one whose module it kept). */
export function listedStage(stages: readonly StageEntry[], stage: number, hide: boolean): number {
  if (!hide) {
    return stage;
  }
  for (let i = Math.min(stage, stages.length - 1); i > 0; i--) {
    if (stages[i].changed) {
      return i;
    }
  }
  return 0;
}

/** The state after the "hide unchanged" toggle: a selected stage that is hidden now gives way
 * to the listed stage whose module it kept, so that no hidden stage stays selected. */
export function setHideUnchanged(
  stages: readonly StageEntry[],
  state: ExplorerViewState,
  hide: boolean
): ExplorerViewState {
  const stage = listedStage(stages, state.stage, hide);
  const base = stage === state.stage ? state.base : state.base === stage ? null : state.base;
  return { ...state, hideUnchanged: hide, stage, base };
}

/** The next (delta = 1) or previous (-1) listed stage from the selected one. */
export function step(
  stages: readonly StageEntry[],
  state: ExplorerViewState,
  delta: 1 | -1
): number {
  const shown = visibleStages(stages, state.hideUnchanged, state.stage);
  const at = shown.findIndex(s => s.index === state.stage);
  const next = shown[Math.min(shown.length - 1, Math.max(0, at + delta))];
  return next ? next.index : state.stage;
}

/** The stage the selected one is compared with, or null when there is none (stage 0 against
 * its previous stage, or a stage against itself). */
export function compareWith(state: ExplorerViewState): number | null {
  const base = state.base === null ? state.stage - 1 : state.base;
  return base < 0 || base === state.stage ? null : base;
}

export type DiffLookup =
  | { kind: 'same' }
  | { kind: 'found'; entry: DiffEntry; reversed: boolean }
  | { kind: 'missing' };

/** The diff of stage `before` -> stage `after` among `entries` (the payload's, and any a live
 * kernel computed): exactly, or between stages of the same structures, or the reverse diff.
 * Stages of one structure need no diff. */
export function findDiff(
  payload: ExplorerPayload,
  entries: readonly DiffEntry[],
  before: number,
  after: number
): DiffLookup {
  const structure = (i: number) => payload.stages[i]?.structure ?? i;
  const sa = structure(before);
  const sb = structure(after);
  if (sa === sb) {
    return { kind: 'same' };
  }
  let best: DiffLookup = { kind: 'missing' };
  let bestScore = 0;
  for (const entry of entries) {
    const eb = structure(entry.before);
    const ea = structure(entry.after);
    let score = 0;
    let reversed = false;
    if (entry.before === before && entry.after === after) {
      score = 4;
    } else if (entry.before === after && entry.after === before) {
      score = 3;
      reversed = true;
    } else if (eb === sa && ea === sb) {
      score = 2;
    } else if (eb === sb && ea === sa) {
      score = 1;
      reversed = true;
    }
    if (score > bestScore) {
      best = { kind: 'found', entry, reversed };
      bestScore = score;
    }
  }
  return best;
}

/** Counts as shown for a diff read in either direction. */
export function diffCounts(
  entry: DiffEntry,
  reversed: boolean
): { added: number; removed: number; changed: number } {
  return reversed
    ? { added: entry.removed, removed: entry.added, changed: entry.changed }
    : { added: entry.added, removed: entry.removed, changed: entry.changed };
}

/** Why a payload cannot be shown, or null when it can. */
export function payloadProblem(payload: unknown): string | null {
  if (typeof payload !== 'object' || payload === null) {
    return 'no explorer data in this output';
  }
  const version = (payload as { schema_version?: unknown }).schema_version;
  if (version !== 1) {
    return (
      `this output was written with explorer schema version ${JSON.stringify(version)}; this ` +
      'version of reactant-lab reads version 1 only. Install the reactant_lab release that ' +
      'wrote it, or re-run the cell.'
    );
  }
  const stages = (payload as { stages?: unknown }).stages;
  if (!Array.isArray(stages) || stages.length === 0) {
    return 'the explorer data holds no stages';
  }
  return null;
}
