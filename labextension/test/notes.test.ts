// Small things the explorer says: a stage note once for all the stages it applies to, the live
// explorer's words for the API's `exact=True`, a Graphviz summary in the theme's colours, and the
// stage list narrowed beside a side-by-side diff.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { themedSvg } from '../src/explorer/graphstyle';
import { stageNotes } from '../src/explorer/stagelist';
import { narrowStages, type ExplorerViewState } from '../src/explorer/state';
import type { StageEntry } from '../src/explorer/types';
import { forLiveExplorer } from '../src/explorer/verify';

function stage(index: number, unavailable: string | null): StageEntry {
  return {
    index,
    name: `s${index}`,
    group: `s${index}`,
    pipeline: index ? 'p' : '',
    seconds: 0,
    changed: true,
    unavailable,
    ops: 1,
    op_counts: {},
    op_delta: {},
    text: 0,
    structure: index
  } as StageEntry;
}

test('a note shared by three stages is said once, naming them', () => {
  const left = 'left out: a<1>, b<16> (exact=True runs them)';
  const notes = stageNotes([stage(0, null), stage(1, left), stage(2, 'other'), stage(3, left), stage(6, left)]);
  assert.deepEqual(notes, [
    [left, [1, 3, 6]],
    ['other', [2]]
  ]);
  assert.deepEqual(stageNotes([stage(0, null)]), []);
});

test('the live explorer points at its checkbox where the API says exact=True', () => {
  assert.equal(
    forLiveExplorer('left out: a<1> (the evidence ...; exact=True runs them); x (exact=True leaves them out)'),
    'left out: a<1> (the evidence ...; ticking “Reactant exact” above runs them); x (ticking “Reactant exact” above leaves them out)'
  );
  assert.equal(forLiveExplorer('nothing to point at'), 'nothing to point at');
});

test('a summary picture takes the palette, and nothing else of it', () => {
  const svg =
    '<svg width="62pt" viewBox="0 0 62 116" xmlns="http://www.w3.org/2000/svg"><g class="graph">' +
    '<polygon fill="white"/><g class="node arg m-mutated"><path fill="#fed7aa"/></g></g></svg>';
  const palette = { bg: '#111111', fg: '#eeeeee', mute: '#999', line: '#444', accent: '#58a6ff', green: '#56d364', orange: '#ffa657' };
  const out = themedSvg(svg, palette);
  assert.ok(out.startsWith('<svg width="62pt" viewBox="0 0 62 116" xmlns="http://www.w3.org/2000/svg"><style>'));
  assert.ok(out.includes('.graph>polygon{fill:#111111}') && out.includes('text{fill:#eeeeee}'));
  assert.ok(out.includes('.node.m-mutated>path') && out.includes('color-mix(in srgb,#ffa657 22%,#111111)'));
  assert.ok(out.endsWith('<g class="graph"><polygon fill="white"/><g class="node arg m-mutated"><path fill="#fed7aa"/></g></g></svg>'));
  // a value that could end the stylesheet is not written into it
  const bad = themedSvg(svg, { ...palette, bg: 'red}</style><script>' });
  assert.ok(!bad.includes('<script>') && bad.includes('.graph>polygon{fill:#888}'));
});

test('the stage list is narrow beside a side-by-side diff, unless all its columns are asked for', () => {
  const base: ExplorerViewState = { stage: 1, base: null, layout: 'side-by-side', hideUnchanged: false, tab: 'diff' };
  assert.equal(narrowStages(base), true);
  assert.equal(narrowStages({ ...base, allStageColumns: true }), false);
  assert.equal(narrowStages({ ...base, layout: 'unified' }), null);
  assert.equal(narrowStages({ ...base, tab: 'graph' }), null);
  assert.equal(narrowStages({ ...base, tab: 'code' }), true, "a kernel's code: no stage selects it");
});
