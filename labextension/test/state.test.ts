// View state: which stages are listed, what a stage is compared with, which diff answers it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  carryOver,
  compareWith,
  findDiff,
  initialState,
  payloadProblem,
  step,
  visibleStages
} from '../src/explorer/state';
import type { DiffEntry, ExplorerPayload, StageEntry } from '../src/explorer/types';

function stage(index: number, changed: boolean, structure: number): StageEntry {
  return {
    index,
    name: `s${index}`,
    group: `s${index}`,
    pipeline: index ? 'p' : '',
    seconds: 0.001,
    changed,
    unavailable: null,
    ops: 10,
    op_counts: {},
    op_delta: {},
    text: structure,
    structure
  };
}

function diff(before: number, after: number, kind: DiffEntry['kind'] = 'previous'): DiffEntry {
  return { before, after, kind, empty: false, added: 1, removed: 2, changed: 3, summary: '', truncated: false, rows: [] };
}

// Stages 0..5: 1 and 4 change the module; 2, 3 keep 1's structure, 5 keeps 4's.
const STAGES = [stage(0, true, 0), stage(1, true, 1), stage(2, false, 1), stage(3, false, 1), stage(4, true, 4), stage(5, false, 4)];

function payload(diffs: DiffEntry[] = []): ExplorerPayload {
  return {
    schema_version: 1,
    meta: { function: 'f', mode: 'jax', optimize: 'all', granularity: 'stage', target: 'cpu' },
    signature: { args: [], results: [], skipped: [] },
    texts: [],
    stages: STAGES,
    diffs,
    metrics: { stages: [], ops: [], counts: [], totals: [] },
    graphs: [],
    xla: null,
    run: null
  };
}

test('the explorer opens on the first stage that changed the module', () => {
  assert.equal(initialState(payload()).stage, 1);
  const none = { ...payload(), stages: [stage(0, true, 0), stage(1, false, 0)] };
  assert.equal(initialState(none).stage, 0);
});

test('hiding unchanged stages keeps stage 0, the changed ones and the selected one', () => {
  assert.deepEqual(visibleStages(STAGES, false, 3).map(s => s.index), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(visibleStages(STAGES, true, 1).map(s => s.index), [0, 1, 4]);
  assert.deepEqual(visibleStages(STAGES, true, 3).map(s => s.index), [0, 1, 3, 4]);
});

test('stepping moves among the listed stages and stops at the ends', () => {
  const state = { ...initialState(payload()), hideUnchanged: true };
  assert.equal(step(STAGES, state, 1), 4);
  assert.equal(step(STAGES, { ...state, stage: 4 }, 1), 4);
  assert.equal(step(STAGES, { ...state, stage: 4 }, -1), 1);
  assert.equal(step(STAGES, { ...state, hideUnchanged: false }, 1), 2);
});

test('a stage is compared with the one before unless another is chosen', () => {
  const state = initialState(payload());
  assert.equal(compareWith({ ...state, stage: 4 }), 3);
  assert.equal(compareWith({ ...state, stage: 0 }), null);
  assert.equal(compareWith({ ...state, stage: 0, base: 4 }), 4);
  assert.equal(compareWith({ ...state, stage: 4, base: 4 }), null);
});

test('stages of one structure need no diff', () => {
  assert.deepEqual(findDiff(payload(), [], 1, 3), { kind: 'same' });
});

test('the exact diff is preferred, then one between the same structures, then the reverse', () => {
  const exact = diff(3, 4);
  const bySructure = diff(1, 4, 'pair');
  const p = payload([bySructure, exact]);
  assert.deepEqual(findDiff(p, p.diffs, 3, 4), { kind: 'found', entry: exact, reversed: false });
  assert.deepEqual(findDiff(p, p.diffs, 2, 5), { kind: 'found', entry: bySructure, reversed: false });
  assert.deepEqual(findDiff(p, p.diffs, 5, 2), { kind: 'found', entry: bySructure, reversed: true });
  assert.deepEqual(findDiff(p, p.diffs, 4, 3), { kind: 'found', entry: exact, reversed: true });
});

test('a pair nobody computed is missing', () => {
  const p = payload([diff(0, 1)]);
  assert.deepEqual(findDiff(p, p.diffs, 0, 4), { kind: 'missing' });
  const live = diff(0, 4, 'pair');
  assert.deepEqual(findDiff(p, [...p.diffs, live], 0, 4), { kind: 'found', entry: live, reversed: false });
});

test('after a re-run the selection is kept when the stage still exists', () => {
  const state = { ...initialState(payload()), stage: 5, base: 2, hideUnchanged: true };
  assert.deepEqual(carryOver(state, payload()), state);
  const shorter = { ...payload(), stages: STAGES.slice(0, 2) };
  const kept = carryOver(state, shorter);
  assert.equal(kept.stage, 1);
  assert.equal(kept.base, null);
  assert.equal(kept.hideUnchanged, true);
});

test('unknown schema versions are refused with a message saying why', () => {
  assert.equal(payloadProblem(payload()), null);
  assert.match(payloadProblem({ ...payload(), schema_version: 2 }) ?? '', /schema version 2.*reads version 1/);
  assert.match(payloadProblem(null) ?? '', /no explorer data/);
  assert.match(payloadProblem({ schema_version: 1, stages: [] }) ?? '', /no stages/);
});
