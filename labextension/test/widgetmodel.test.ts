// The notebook renderer asks the widget manager for a model before the widget renderer does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasWidgetModel } from '../src/widgetmodel';

function rendererOf(models: Set<string>, restored = true) {
  const manager = { restoredStatus: restored, has_model: (id: string) => models.has(id) };
  return { renderer: { _manager: { promise: Promise.resolve(manager) } }, manager };
}

test('a model the manager has, one it lacks, one announced a moment later', async () => {
  const models = new Set(['a']);
  const { renderer } = rendererOf(models);
  assert.equal(await hasWidgetModel(renderer, 'a'), true);
  assert.equal(await hasWidgetModel(renderer, 'gone'), false);
  setTimeout(() => models.add('late'), 300);
  assert.equal(await hasWidgetModel(renderer, 'late'), true);
});

test('waits until the manager restored the kernel widgets', async () => {
  const { renderer, manager } = rendererOf(new Set(), false);
  setTimeout(() => {
    manager.restoredStatus = true;
  }, 200);
  setTimeout(() => manager.has_model('x') || (manager.has_model = () => true), 250);
  assert.equal(await hasWidgetModel(renderer, 'x'), true);
});

test('a renderer without a manager to ask: null (the renderer is asked as before)', async () => {
  assert.equal(await hasWidgetModel({}, 'a'), null);
  assert.equal(await hasWidgetModel(null, 'a'), null);
  assert.equal(await hasWidgetModel({ _manager: { promise: Promise.resolve({}) } }, 'a'), null);
});
