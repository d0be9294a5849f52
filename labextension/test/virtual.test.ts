// The virtualized list draws only the rows in view, with a margin.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visibleRange, visibleWindow } from '../src/explorer/virtual';

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

test('rows of several lines: the rows around the viewport by their offsets', () => {
  // 1,000 rows, every tenth three lines tall
  const offsets = [0];
  for (let i = 0; i < 1000; i++) {
    offsets.push(offsets[i] + (i % 10 === 0 ? 54 : 18));
  }
  assert.deepEqual(visibleRange(0, 540, offsets, 0), [0, 25]);
  const [first, last] = visibleRange(offsets[500], 540, offsets, 5);
  assert.equal(first, 495);
  assert.ok(offsets[last] >= offsets[500] + 540 && last < 540);
  assert.deepEqual(visibleRange(0, 540, [0], 20), [0, 0]);
  assert.equal(visibleRange(offsets[1000], 540, offsets, 0)[1], 1000);
});
