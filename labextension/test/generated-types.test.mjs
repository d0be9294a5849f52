// src/explorer/payload.generated.ts is what scripts/gen-types.mjs makes of the schema today: a
// schema change without `jlpm gen:types` fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { generateTypes, OUTPUT } from '../scripts/gen-types.mjs';

test('the committed payload types are generated from the current schema', async () => {
  const fresh = await generateTypes();
  const committed = readFileSync(OUTPUT, 'utf8');
  assert.ok(fresh.includes('export interface ExplorerPayload'), 'the generator made no payload type');
  assert.equal(
    committed,
    fresh,
    'src/explorer/payload.generated.ts is stale: run `jlpm gen:types` in labextension/ and commit it'
  );
});
