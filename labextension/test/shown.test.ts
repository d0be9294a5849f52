// What a notebook output saves once the live widget shows a re-run's payload.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shownData } from '../src/shown';
import { MIME_TYPE, type ExplorerPayload } from '../src/explorer/types';

const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';

function payload(optimize: string): ExplorerPayload {
  return { schema_version: 1, meta: { optimize } } as unknown as ExplorerPayload;
}

const cellRun = {
  [MIME_TYPE]: payload('all'),
  'text/html': '<div>all</div>',
  'text/plain': 'all',
  [WIDGET_MIME]: { model_id: 'm1', version_major: 2, version_minor: 1 }
};

test('a re-run replaces the payload, the HTML and the text, and keeps the widget view', () => {
  const next = shownData(cellRun, {
    payload: payload('none'),
    saved: { 'text/html': '<div>none</div>', 'text/plain': 'none' }
  });
  assert.ok(next);
  assert.deepEqual((next[MIME_TYPE] as { meta: unknown }).meta, { optimize: 'none' });
  assert.equal(next['text/html'], '<div>none</div>');
  assert.equal(next['text/plain'], 'none');
  assert.deepEqual(next[WIDGET_MIME], cellRun[WIDGET_MIME]);
});

test('what the output already holds changes nothing (the notebook stays clean)', () => {
  assert.equal(shownData(cellRun, { payload: payload('all'), saved: {} }), null);
});

test('a payload without its bundle keeps the output\'s HTML and text', () => {
  const next = shownData(cellRun, { payload: payload('none'), saved: {} });
  assert.ok(next);
  assert.equal(next['text/html'], '<div>all</div>');
  assert.equal((next[MIME_TYPE] as { meta: { optimize: string } }).meta.optimize, 'none');
});
