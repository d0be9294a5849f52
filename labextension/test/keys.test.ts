// Keyboard navigation: the tabs (Left / Right wrap, Home, End), the stage list (Up / Down, j / k,
// Home, End), and "hide unchanged" moving a selection it would hide.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasModifier, stageKeyMove, tabKeyTarget } from '../src/explorer/keys';
import { initialState, listedStage, setHideUnchanged, step, visibleStages } from '../src/explorer/state';
import type { ExplorerPayload, StageEntry } from '../src/explorer/types';

function stage(index: number, changed: boolean): StageEntry {
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
    text: index,
    structure: index
  };
}

// Stages 0..5: 1 and 4 change the module.
const STAGES = [stage(0, true), stage(1, true), stage(2, false), stage(3, false), stage(4, true), stage(5, false)];
const PAYLOAD = { stages: STAGES } as unknown as ExplorerPayload;

test('tabs: Right and Left move and wrap, Home and End jump, other keys are not theirs', () => {
  assert.equal(tabKeyTarget('ArrowRight', 0, 7), 1);
  assert.equal(tabKeyTarget('ArrowRight', 6, 7), 0);
  assert.equal(tabKeyTarget('ArrowLeft', 0, 7), 6);
  assert.equal(tabKeyTarget('ArrowLeft', 3, 7), 2);
  assert.equal(tabKeyTarget('Home', 4, 7), 0);
  assert.equal(tabKeyTarget('End', 1, 7), 6);
  for (const key of ['ArrowUp', 'ArrowDown', 'Enter', ' ', 'Tab', 'a']) {
    assert.equal(tabKeyTarget(key, 2, 7), null, key);
  }
  assert.equal(tabKeyTarget('ArrowRight', 0, 0), null);
});

test('stage list: Up / Down and k / j step, Home and End go to the ends', () => {
  assert.deepEqual(stageKeyMove('ArrowDown'), { kind: 'step', delta: 1 });
  assert.deepEqual(stageKeyMove('j'), { kind: 'step', delta: 1 });
  assert.deepEqual(stageKeyMove('ArrowUp'), { kind: 'step', delta: -1 });
  assert.deepEqual(stageKeyMove('k'), { kind: 'step', delta: -1 });
  assert.deepEqual(stageKeyMove('Home'), { kind: 'end', last: false });
  assert.deepEqual(stageKeyMove('End'), { kind: 'end', last: true });
  for (const key of ['ArrowLeft', 'ArrowRight', 'Enter', 'J', 'x']) {
    assert.equal(stageKeyMove(key), null, key);
  }
  const none = { altKey: false, ctrlKey: false, metaKey: false };
  assert.equal(hasModifier(none), false);
  assert.equal(hasModifier({ ...none, ctrlKey: true }), true);
  assert.equal(hasModifier({ ...none, metaKey: true }), true);
});

test('hiding unchanged stages moves a hidden selection to the stage whose module it kept', () => {
  const state = { ...initialState(PAYLOAD), stage: 3, base: 0 };
  const hidden = setHideUnchanged(STAGES, state, true);
  assert.equal(hidden.hideUnchanged, true);
  assert.equal(hidden.stage, 1);
  assert.equal(hidden.base, 0);
  assert.deepEqual(visibleStages(STAGES, true, hidden.stage).map(s => s.index), [0, 1, 4]);
  // A listed stage stays selected; showing them all again keeps the selection.
  assert.equal(setHideUnchanged(STAGES, { ...state, stage: 4 }, true).stage, 4);
  assert.equal(setHideUnchanged(STAGES, { ...state, stage: 3 }, false).stage, 3);
  assert.equal(listedStage(STAGES, 5, true), 4);
  assert.equal(listedStage(STAGES, 0, true), 0);
  // A base equal to the new selection is dropped (a stage is not compared with itself).
  assert.equal(setHideUnchanged(STAGES, { ...state, stage: 2, base: 1 }, true).base, null);
  // Then Down goes to the next listed stage.
  assert.equal(step(STAGES, hidden, 1), 4);
});
