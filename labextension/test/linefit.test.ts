// A long diff line in its column: the head (results, op name) and every changed token show;
// short wraps are whole; only unchanged runs between the kept parts are elided.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fitLine, gapLabel, lineHead, type Fitted } from '../src/explorer/linefit';

/** The text a fitted line shows, rows joined with '\n', elided runs as their markers. */
function shown(line: string, f: Fitted): string {
  return f.segments
    .map(s => (s.kind === 'break' ? '\n' : s.kind === 'gap' ? gapLabel(s.lo, s.hi, line.length) : line.slice(s.lo, s.hi)))
    .join('');
}

/** The characters of `line` the fitted cell shows, as a set of positions. */
function visible(f: Fitted): Set<number> {
  const out = new Set<number>();
  for (const s of f.segments) {
    if (s.kind === 'text') {
      for (let i = s.lo; i < s.hi; i++) {
        out.add(i);
      }
    }
  }
  return out;
}

const WHILE =
  '    %0:4 = stablehlo.while(%iterArg = %c_1, %iterArg_0 = %c_0, %iterArg_1 = %c, %iterArg_2 = %arg0, ' +
  '%iterArg_3 = %arg1) : tensor<i64>, tensor<i64>, tensor<i64>, tensor<20x20xf64>, tensor<20x20xf64> attributes {x = 1 : i64}';

function spanOf(line: string, token: string, from = 0): [number, number] {
  const at = line.indexOf(token, from);
  assert.ok(at >= 0, token);
  return [at, at + token.length];
}

test('the head of a line: results and op name, MLIR and HLO', () => {
  const heads = JSON.parse(
    readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', 'line_heads.json'), 'utf8')
  ) as { line: string; head: number[] }[];
  assert.ok(heads.length > 8);
  for (const { line, head } of heads) {
    assert.deepEqual(lineHead(line), head, line);
  }
  const h = lineHead(WHILE);
  assert.equal(WHILE.slice(h[0], h[1]), '%0:4 = stablehlo.while');
});

test('a long line whose change is far right keeps its head and the change, in one row', () => {
  const change = spanOf(WHILE, '%arg1');
  for (const width of [36, 45, 60]) {
    const f = fitLine(WHILE, width, { keep: change, maxRows: 1 });
    const text = shown(WHILE, f);
    assert.ok(text.includes('%0:4 = stablehlo.while'), `${width}: ${text}`);
    assert.ok(text.includes('%arg1'), `${width}: ${text}`);
    assert.ok(text.includes('…'), text);
    assert.equal(f.rows, 1, `${width}: ${JSON.stringify(text)}`);
    for (const row of text.split('\n')) {
      assert.ok(row.length <= width, `${width}: row of ${row.length}: ${row}`);
    }
  }
});

test('the issue-40 stencil line at 45 characters shows the op, not `s…37…Arg_1`', () => {
  const line = '    %0:4 = stablehlo.while(%iterArg = %c, %iterArg_0 = %c_1, %iterArg_1 = %arg0, %iterArg_2 = %arg1)';
  const f = fitLine(line, 45, { keep: [...spanOf(line, '%c_1'), ...spanOf(line, '%arg0')] });
  const text = shown(line, f);
  assert.ok(text.startsWith('    %0:4 = stablehlo.while('), text);
  assert.ok(text.includes('%c_1') && text.includes('%arg0'), text);
});

test('a line that wraps to a few rows is shown whole, broken after a comma or space', () => {
  const f = fitLine(WHILE, 90, { keep: spanOf(WHILE, '%arg1'), maxRows: 3 });
  assert.equal(f.segments.filter(s => s.kind === 'gap').length, 0);
  assert.equal(visible(f).size, WHILE.length);
  const rows = shown(WHILE, f).split('\n');
  assert.equal(rows.length, f.rows);
  assert.ok(f.rows >= 2 && f.rows <= 3);
  assert.ok(rows[0].length <= 90 && rows.slice(1).every(r => r.length <= 90 - f.indent));
  assert.ok(rows.slice(0, -1).every(r => /[\s,(]$/.test(r)), JSON.stringify(rows));
});

test('every change shows however many there are: the kept parts wrap rather than go', () => {
  const line = `    %9 = stablehlo.custom_call @k(${Array.from({ length: 40 }, (_, i) => `%a${i}`).join(', ')}) : () -> ()`;
  const keep: number[] = [];
  for (const k of [3, 17, 29, 38]) {
    keep.push(...spanOf(line, `%a${k},`).map((x, j) => x - j)); // the name, not the comma
  }
  const f = fitLine(line, 40, { keep, maxRows: 1 });
  const seen = visible(f);
  for (let k = 0; k + 1 < keep.length; k += 2) {
    for (let i = keep[k]; i < keep[k + 1]; i++) {
      assert.ok(seen.has(i), `position ${i} of ${line.slice(keep[k], keep[k + 1])}`);
    }
  }
  const text = shown(line, f);
  assert.ok(text.startsWith('    %9 = stablehlo.custom_call'), text);
  // only unchanged runs are elided: each marker stands for text between kept parts
  for (const s of f.segments) {
    if (s.kind === 'gap') {
      for (let k = 0; k + 1 < keep.length; k += 2) {
        assert.ok(s.hi <= keep[k] || s.lo >= keep[k + 1]);
      }
    }
  }
});

test('the whole line on request, and short lines as they are', () => {
  const f = fitLine(WHILE, 40, { keep: spanOf(WHILE, '%arg1'), maxRows: 1, whole: true });
  assert.equal(visible(f).size, WHILE.length);
  assert.ok(f.rows >= Math.ceil(WHILE.length / 40));
  assert.deepEqual(fitLine('  %1 = stablehlo.add %0, %0', 40), {
    segments: [{ kind: 'text', lo: 0, hi: 27 }],
    rows: 1,
    indent: 6
  });
});

test('elided edges fall between tokens, not inside one', () => {
  const change = spanOf(WHILE, '%arg1');
  const f = fitLine(WHILE, 60, { keep: change, maxRows: 1 });
  for (const s of f.segments) {
    if (s.kind === 'gap' && s.lo > 0 && s.hi < WHILE.length) {
      assert.ok(/[\s,()<>{}[\]:=]/.test(WHILE[s.lo - 1]) || /[\s,()<>{}[\]:=]/.test(WHILE[s.lo]), shown(WHILE, f));
    }
  }
});

test('a narrow column breaks rows between the words of the head, not inside the op name', () => {
  for (const width of [22, 26, 30]) {
    const f = fitLine(WHILE, width, { keep: spanOf(WHILE, '%arg1'), maxRows: 1 });
    const text = shown(WHILE, f);
    assert.ok(text.split('\n').some(row => row.includes('stablehlo.while')), `${width}: ${JSON.stringify(text)}`);
    assert.ok(text.split('\n').some(row => row.includes('%arg1')), `${width}: ${JSON.stringify(text)}`);
  }
});
