// The virtualized list draws only the rows in view, with a margin.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visibleWindow } from '../src/explorer/virtual';

test('only the rows around the viewport are drawn', () => {
  assert.deepEqual(visibleWindow(0, 540, 18, 20_000, 20), [0, 50]);
  assert.deepEqual(visibleWindow(18 * 10_000, 540, 18, 20_000, 20), [9_980, 10_050]);
  const [first, last] = visibleWindow(18 * 19_990, 540, 18, 20_000, 20);
  assert.equal(last, 20_000);
  assert.ok(last - first < 100);
});

test('short lists are drawn whole', () => {
  assert.deepEqual(visibleWindow(0, 540, 18, 7), [0, 7]);
  assert.deepEqual(visibleWindow(0, 540, 18, 0), [0, 0]);
});
