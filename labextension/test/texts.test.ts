// Payload texts decode (plain, gzip, line delta) with DecompressionStream, once each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { applyDelta, gunzipBase64, TextStore } from '../src/explorer/texts';
import type { TextEntry } from '../src/explorer/types';

const pack = (s: string) => gzipSync(Buffer.from(s, 'utf8')).toString('base64');

const BASE = Array.from({ length: 500 }, (_, i) => `  %${i} = stablehlo.add %a, %b : tensor<4xf32> // é ${i}`).join('\n');
const CHANGED = BASE.split('\n');
CHANGED.splice(100, 2, '  %new = stablehlo.multiply %a, %b : tensor<4xf32>');
const DELTA = [[0, 100], '  %new = stablehlo.multiply %a, %b : tensor<4xf32>', [102, 500]];

const ENTRIES: TextEntry[] = [
  { id: 0, lines: 1, chars: 6, encoding: 'plain', data: 'module' },
  { id: 1, lines: 500, chars: BASE.length, encoding: 'gzip', data: pack(BASE) },
  { id: 2, lines: 499, chars: 0, encoding: 'delta', base: 1, data: pack(JSON.stringify(DELTA)) },
  // An encoding this version does not know (the schema has none such): refused with a message.
  { id: 3, lines: 1, chars: 1, encoding: 'zstd', data: '' } as unknown as TextEntry
];

test('gzip text unpacks to the UTF-8 text', async () => {
  assert.equal(await gunzipBase64(pack('a\nb é')), 'a\nb é');
});

test('every encoding decodes to its lines', async () => {
  const store = new TextStore(ENTRIES);
  assert.deepEqual(await store.lines(0), ['module']);
  assert.equal(await store.text(1), BASE);
  assert.deepEqual(await store.lines(2), CHANGED);
  assert.equal(store.lineCount(2), 499);
});

test('a text is decoded once however often it is asked for', async () => {
  const store = new TextStore(ENTRIES);
  const [a, b] = await Promise.all([store.lines(2), store.lines(2)]);
  assert.equal(a, b);
  assert.equal(await store.lines(1), await store.lines(1));
});

test('unknown encodings and missing texts are errors that say so', async () => {
  const store = new TextStore(ENTRIES);
  await assert.rejects(store.lines(3), /unknown encoding "zstd"/);
  assert.throws(() => store.lineCount(9), /no text 9/);
});

test('a delta copies base line ranges and inserts strings', () => {
  assert.deepEqual(applyDelta(['a', 'b', 'c'], [[0, 1], 'x\ny', [2, 3]]), ['a', 'x', 'y', 'c']);
  assert.throws(() => applyDelta(['a'], [7]), /bad delta operation 7/);
});
