// Source provenance: a payload's compact maps read back per stage and per code line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SourceMap } from '../src/explorer/provenance';
import type { ExplorerPayload, Provenance } from '../src/explorer/types';

// Two stages. Stage 0: lines 3-6 from code lines 12 (called from 20), 13, 13, 20; stage 1: line 3
// is an op a pass fused from lines 12 and 13.
const PROVENANCE: Provenance = {
  files: ['Cell In[2]', 'other.py'],
  sources: [
    [[0, 12, 9, 0, 20, 1]],
    [[0, 13, 5]],
    [[0, 20, 1]],
    [[0, 12, 9], [0, 13, 5]],
    [[1, 4, 2]]
  ],
  maps: [
    [0, 0, 1, 2, 2, 3],
    [0, 0, 4, 0, 5]
  ],
  stages: [0, 1],
  code: { file: 0, first: 11, lines: ['def f(x):', '    a = g(x)', '    return a + 1'] }
};

const map = SourceMap.of({ provenance: PROVENANCE } as unknown as ExplorerPayload)!;

test('displayed lines map to their sources, lines past the map to none', () => {
  assert.equal(map.at(0, 3), 1);
  assert.equal(map.at(0, 1), 0);
  assert.equal(map.at(0, 99), 0);
  assert.equal(map.at(1, 3), 4);
  assert.equal(map.at(7, 3), 0);
});

test('hover text names the file, line, column and the calls', () => {
  assert.equal(map.describe(1), 'from Cell In[2]:12:9 (called from line 20)');
  assert.equal(map.describe(4), 'from Cell In[2]:12:9 and Cell In[2]:13:5 (merged by a pass)');
  assert.equal(map.describe(5), 'from other.py:4:2');
  assert.equal(map.codeLine(1), 12);
  assert.equal(map.codeLine(5), null);
});

test('a code line picks its ops in every stage, a call line the ops of the call', () => {
  assert.deepEqual(map.opsOf(0, 13), [4, 5]);
  assert.deepEqual(map.opsOf(1, 13), [3]);
  assert.deepEqual(map.opsOf(0, 20), [3, 6]);
  assert.deepEqual(map.counts(12), [
    { stage: 0, count: 1, merged: [] },
    { stage: 1, count: 1, merged: [13] }
  ]);
  assert.equal(map.summary(12, ['traced', 'final']), 'line 12: 1 op in stage 0 (traced), 1 in stage 1 (final), merged with line 13');
  const picked: number[] = [];
  const src = map.forStage(0, 13, line => picked.push(line));
  assert.equal(src.picked(src.at(4)), true);
  assert.equal(src.picked(src.at(3)), false);
  src.pick(12);
  assert.deepEqual(picked, [12]);
});

test('no provenance, no map', () => {
  assert.equal(SourceMap.of({} as ExplorerPayload), null);
  assert.equal(map.code()?.path, 'Cell In[2]');
});
