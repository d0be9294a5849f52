// Diff rows as drawn: side by side and unified, folds, reversed diffs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeStarts, changedOnly, diffText, foldRange, reverseRows, viewRows } from '../src/explorer/diffrows';
import type { DiffRow } from '../src/explorer/types';

// before: 10 lines, after: 10 lines; line 5 changed, line 8 removed, after line 9 added.
const ROWS: DiffRow[] = [
  ['=', 1, [], [[2, 2], [3, 3], [4, 4]]],
  ['~', 5, 5, [0, 3], [0, 4]],
  ['=', 0, [[6, 6], [7, 7]], []],
  ['-', 8, []],
  ['=', 0, [[9, 8]], []],
  ['+', 9, []],
  ['=', 1, [[10, 10]], []]
];

test('side by side: one row per line pair, folded runs as one row', () => {
  const rows = viewRows(ROWS, 'side-by-side');
  assert.equal(rows[0].type, 'fold');
  assert.equal(rows.filter(r => r.type === 'fold').length, 2);
  const changed = rows.find(r => r.type === 'pair' && r.left.kind === 'del' && r.right.kind === 'add');
  assert.deepEqual(changed, {
    type: 'pair',
    left: { side: 'before', line: 5, kind: 'del', spans: [0, 3] },
    right: { side: 'after', line: 5, kind: 'add', spans: [0, 4] }
  });
  const removed = rows.find(r => r.type === 'pair' && r.left.line === 8);
  assert.deepEqual(removed, {
    type: 'pair',
    left: { side: 'before', line: 8, kind: 'del', spans: [] },
    right: { side: 'after', line: null, kind: '', spans: [] }
  });
});

test('unified: a changed line is a removed and an added row', () => {
  const rows = viewRows(ROWS, 'unified');
  const marks = rows.filter(r => r.type === 'uni' && r.mark !== ' ').map(r => (r.type === 'uni' ? `${r.mark}${r.before ?? r.after}` : ''));
  assert.deepEqual(marks, ['-5', '+5', '-8', '+9']);
});

test('an expanded fold shows the lines it hid', () => {
  const rows = viewRows(ROWS, 'side-by-side', new Set([0]), [10, 10]);
  assert.equal(rows.filter(r => r.type === 'fold').length, 1);
  assert.deepEqual(rows[0], {
    type: 'pair',
    left: { side: 'before', line: 1, kind: '', spans: [] },
    right: { side: 'after', line: 1, kind: '', spans: [] }
  });
});

test('a fold runs between its context lines, or to the ends of the texts', () => {
  assert.deepEqual(foldRange(['=', 1, [], [[2, 2]]], 10, 10), [1, 1, 1, 1]);
  assert.deepEqual(foldRange(['=', 3, [[4, 5]], []], 8, 9), [5, 8, 6, 9]);
  assert.deepEqual(foldRange(['=', 2, [[4, 5]], [[7, 8]]], 9, 9), [5, 6, 6, 7]);
});

test('a reversed diff swaps the sides', () => {
  const rev = reverseRows(ROWS);
  assert.deepEqual(rev[1], ['~', 5, 5, [0, 4], [0, 3]]);
  assert.deepEqual(rev[3], ['+', 8, []]);
  assert.deepEqual(rev[4], ['=', 0, [[8, 9]], []]);
  assert.deepEqual(reverseRows(rev), ROWS);
});

test('changed lines only: the change rows, a gap where unchanged lines were', () => {
  const rows = changedOnly(viewRows(ROWS, 'side-by-side'));
  assert.deepEqual(
    rows.map(r => (r.type === 'pair' ? `${r.left.line ?? ''}|${r.right.line ?? ''}` : r.type)),
    ['5|5', 'gap', '8|', 'gap', '|9']
  );
});

test('next / previous change visit the start of each run of changes', () => {
  const rows = viewRows(ROWS, 'unified');
  const starts = changeStarts(rows);
  assert.deepEqual(
    starts.map(i => rows[i]).map(r => (r.type === 'uni' ? `${r.mark}${r.before ?? r.after}` : r.type)),
    ['-5', '-8', '+9']
  );
});

test('the diff as unified text', () => {
  const before = Array.from({ length: 10 }, (_, i) => `b${i + 1}`);
  const after = Array.from({ length: 10 }, (_, i) => `a${i + 1}`);
  const text = diffText(ROWS, before, after, ['stage 0', 'stage 1']).split('\n');
  assert.deepEqual(text.slice(0, 4), ['--- stage 0', '+++ stage 1', '@@ 1 unchanged line @@', ' a2']);
  assert.ok(text.includes('-b5') && text.includes('+a5') && text.includes('-b8') && text.includes('+a9'));
});
