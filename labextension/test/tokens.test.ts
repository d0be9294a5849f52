// The explorer's MLIR lexer gives the same tokens as reactant_lab's Python lexer.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tokenizeLine } from '../src/mlir/tokens';

interface Case {
  line: string;
  tokens: [string, string][];
}

// Written by the Python lexer from tests/golden/highlight_input.mlir; tests/test_widget_frontend.py
// checks that it still matches.
const cases = JSON.parse(
  readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', 'mlir_tokens.json'), 'utf8')
) as Case[];

test('every golden line lexes as the Python lexer lexes it', () => {
  assert.ok(cases.length > 20);
  for (const c of cases) {
    assert.deepEqual(tokenizeLine(c.line), c.tokens, c.line);
  }
});

test('tokens cover the line exactly', () => {
  for (const line of ['%0 = "stablehlo.add"(%a, %b) : (f32, f32) -> f32', '  ^bb0(%x: i1):', '"unterminated', '']) {
    assert.equal(
      tokenizeLine(line)
        .map(t => t[1])
        .join(''),
      line
    );
  }
});

test('a generic-form op name is split into dialect and op', () => {
  const kinds = tokenizeLine('%1 = "stablehlo.sort"(%x)').filter(t => t[0] !== 'text');
  assert.deepEqual(kinds.slice(0, 3), [
    ['ssa', '%1'],
    ['dialect', 'stablehlo.'],
    ['op', 'sort']
  ]);
});

test('a cell magic line starts with a magic token', () => {
  const tokens = tokenizeLine('%%reactant_mlir canonicalize,cse');
  assert.deepEqual(tokens[0], ['magic', '%%reactant_mlir']);
  assert.equal(tokens.map(t => t[1]).join(''), '%%reactant_mlir canonicalize,cse');
});
