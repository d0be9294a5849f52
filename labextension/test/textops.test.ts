// Long lines shown around their changes, find, HLO's source tables, file names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compactWindows, fileName, findMatches, hloTableRuns, mergeRanges } from '../src/explorer/textops';

test('a change past a column edge is brought into view, with the line start kept', () => {
  // A 300-character line changed at 250-260, in a 60-character column, then a 36-character one.
  for (const width of [60, 36, 120]) {
    const w = compactWindows(300, [250, 260], width);
    assert.equal(w.length, 2);
    assert.equal(w[0][0], 0);
    assert.equal(w[1][1], 300);
    // the start, a marker of ~7 characters, the text before the change and the change fit
    const shown = w[0][1] + 7 + (250 - w[1][0]) + 10;
    assert.ok(shown <= width, `${width}: ${JSON.stringify(w)}`);
  }
});

test('changes that fit are shown whole; close changes share one window', () => {
  assert.deepEqual(compactWindows(300, [10, 20], 60), [[0, 300]]);
  assert.deepEqual(compactWindows(300, [], 60), [[0, 300]]);
  assert.deepEqual(compactWindows(400, [100, 105, 120, 125, 350, 351], 120), [
    [0, 18],
    [80, 145],
    [330, 400]
  ]);
});

test('ranges merge sorted', () => {
  assert.deepEqual(mergeRanges([30, 40], [5, 6, 50, 52]), [5, 6, 30, 40, 50, 52]);
});

test('find: every case-insensitive occurrence, by row and cell', () => {
  const rows = [['%0 = stablehlo.add', 'X = ADD'], [''], ['add add']];
  assert.deepEqual(findMatches(rows, 'Add'), [
    { row: 0, cell: 0, start: 15, end: 18 },
    { row: 0, cell: 1, start: 4, end: 7 },
    { row: 2, cell: 0, start: 0, end: 3 },
    { row: 2, cell: 0, start: 4, end: 7 }
  ]);
  assert.deepEqual(findMatches(rows, ''), []);
  assert.equal(findMatches([['aaaa']], 'aa').length, 2);
});

test("XLA's source tables are found as one run", () => {
  const hlo = [
    'HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}',
    '',
    'FileNames',
    '1 "<string>"',
    '',
    'FunctionNames',
    '1 "f"',
    '',
    'FileLocations',
    '1 {file_name_id=1 function_name_id=1 line=6}',
    '',
    'StackFrames',
    '1 {file_location_id=1 parent_frame_id=1}',
    '',
    '',
    'ENTRY %main (a: f32[4]) -> f32[4] {',
    '}'
  ];
  assert.deepEqual(hloTableRuns(hlo), [
    { first: 2, last: 12, names: ['FileNames', 'FunctionNames', 'FileLocations', 'StackFrames'] }
  ]);
  assert.deepEqual(hloTableRuns(['HloModule m', 'ENTRY %main {', '}']), []);
});

test('file names keep only safe characters', () => {
  assert.equal(fileName(['mlp', 'stage3', 'enzyme-hlo{opt}'], 'mlir'), 'mlp-stage3-enzyme-hlo_opt.mlir');
  assert.equal(fileName(['../x y'], 'hlo'), '.._x_y.hlo');
  assert.equal(fileName([''], 'json'), 'reactant_lab.json');
});
