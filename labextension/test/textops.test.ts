// Find, HLO's source tables, file names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileName, findMatches, hloTableRuns, mergeRanges } from '../src/explorer/textops';

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
