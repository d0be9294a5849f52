"""Stage-to-stage diffs: structural (renaming, locations, aliases ignored) and textual."""

from __future__ import annotations

import os
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reactant_lab as rl
from reactant_lab.analysis.align import align
from tests.corpus import CASES

GOLDEN = Path(__file__).parent / "golden"
BEFORE = (GOLDEN / "diff_before.mlir").read_text()
AFTER = (GOLDEN / "diff_after.mlir").read_text()
RENUMBERED = (GOLDEN / "diff_renumbered.mlir").read_text()


def rows(d: rl.Diff) -> list[tuple[str, str, str]]:
    return [(r.kind, d.before[r.a].strip() if r.a is not None else "",
             d.after[r.b].strip() if r.b is not None else "")
            for b in d.blocks for r in b.rows]


def test_golden_fold_of_the_transpose():
    """The enzyme-hlo step of sin(x @ w.T): the transpose goes, dot_general contracts on w."""
    d = rl.diff(BEFORE, AFTER)
    assert (d.added, d.removed, d.changed) == (0, 1, 1) and bool(d)
    (removed, changed) = rows(d)
    assert removed[0] == "removed" and "stablehlo.transpose" in removed[1]
    assert changed[0] == "changed" and "dot_general" in changed[1] and "dot_general" in changed[2]
    expected = GOLDEN / "diff_expected.txt"
    if os.environ.get("REACTANT_LAB_REGEN_GOLDEN"):
        expected.write_text(d.text())
    assert d.text() == expected.read_text()


def test_golden_renumbering_is_not_a_change():
    assert RENUMBERED != BEFORE
    d = rl.diff(BEFORE, RENUMBERED)
    assert not d and d.summary() == "no structural change" and d.added == d.changed == 0
    textual = rl.diff(BEFORE, RENUMBERED, structural=False)
    assert textual and textual.changed > 0
    assert "no structural change" in rl.diff_html(d) and "no structural change" in rl.diff_html(d, "unified")


def test_locations_and_alias_order_are_not_changes():
    text = ("#map1 = affine_map<(d0) -> (d0)>\n#map2 = affine_map<(d0) -> (d0 + 1)>\n"
            'module {\n  %0 = "t.op"() {a = #map1, b = #map2} : () -> i32 loc("a.py":1:2)\n}\n')
    swapped = (text.replace("#map1", "#mapX").replace("#map2", "#map1").replace("#mapX", "#map2")
               .replace('loc("a.py":1:2)', "loc(#loc9)") + "#loc9 = loc(unknown)\n")
    assert not rl.diff(text, swapped)
    assert rl.diff(text, text.replace("d0 + 1", "d0 + 2")).changed == 1


def test_another_op_is_a_removed_and_an_added_line():
    d = rl.diff(BEFORE, BEFORE.replace("%2 = stablehlo.sine %1", "%2 = stablehlo.cosine %1"))
    assert (d.added, d.removed, d.changed) == (1, 1, 0)
    assert [k for k, *_ in rows(d)] == ["removed", "added"]


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("dims = [1, 0]", "dims = [0, 1]"),
    lambda t: t.replace("%arg0, %0, contracting", "%0, %arg0, contracting"),
])
def test_real_changes_are_changes(edit):
    changed = edit(BEFORE)
    assert changed != BEFORE
    d = rl.diff(BEFORE, changed)
    assert d.changed == 1 and d.added == d.removed == 0
    (row,) = [r for b in d.blocks for r in b.rows]
    a_spans, b_spans = d.spans(row)
    assert a_spans and b_spans


def test_swapped_operands_are_marked_inside_the_line():
    d = rl.diff(BEFORE, BEFORE.replace("%arg0, %0, contracting", "%0, %arg0, contracting"))
    (row,) = [r for b in d.blocks for r in b.rows]
    marked = [d.after[row.b][s:e] for s, e in d.spans(row)[1]]
    assert "".join(marked).replace(" ", "") in ("%0,%arg0", "%0,%arg0,") or all(
        m.strip(", ") in ("%0", "%arg0") for m in marked)


def _renumber_everything(text: str) -> str:
    """Rename every SSA value by one consistent, order-scrambling map."""
    names = sorted(set(re.findall(r"%[A-Za-z0-9_]+", text)), key=len, reverse=True)
    shuffled = names[:]
    random.shuffle(shuffled)
    mapping = {n: f"%r{k}_{m.strip('%')}" for k, (n, m) in enumerate(zip(names, shuffled,
                                                                         strict=True))}
    return re.sub(r"%[A-Za-z0-9_]+", lambda m: mapping[m.group(0)], text)


@pytest.mark.parametrize("case", [c for c in CASES if c.name in (
    "mlp", "cond", "while_loop", "scan", "scatter", "sort_argmax", "int32", "preserved")],
    ids=lambda c: c.name)
def test_structural_diff_agrees_with_stage_changed(case, rng):
    args, kwargs = case.make(rng)
    stages = rl.trace(case.fn, *args, **kwargs).stages("all")
    for s in stages.stages[1:]:
        d = rl.diff(stages[s.index - 1], s)
        assert bool(d) == s.changed, (case.name, s.name, d)
        assert d.before_name == stages[s.index - 1].name and d.after_name == s.name
    final = stages.final.ir
    assert not rl.diff(final, _renumber_everything(final))


def test_the_fold_shows_exactly_that_change_at_pass_granularity(rng):
    def f(x, w):
        return jnp.sin(x @ w.T)

    x, w = rng.standard_normal((4, 3), np.float32), rng.standard_normal((5, 3), np.float32)
    stages = rl.trace(f, x, w).stages("all", granularity="pass")
    fold = next(s for s in stages.stages
                if "stablehlo.transpose" not in s.op_counts
                and "stablehlo.transpose" in stages[s.index - 1].op_counts)
    kinds = [(k, "transpose" in a, "dot_general" in b) for k, a, b in
             rows(rl.diff(stages[fold.index - 1], fold))]
    assert kinds == [("removed", True, False), ("changed", False, True)]


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.classes: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.classes += (dict(attrs).get("class") or "").split()


def test_html_layouts_and_folding():
    body = "\n".join(f"    %{i} = stablehlo.add %a, %b : tensor<{i}xf32>" for i in range(400))
    before = f"module {{\n{body}\n}}\n"
    after = before.replace("tensor<200xf32>", "tensor<200xf64>")
    d = rl.diff(before, after)
    assert d.changed == 1
    for layout in ("side-by-side", "unified"):
        p = _Collect()
        p.feed(rl.diff_html(d, layout))
        assert "x" in p.classes and "del" in p.classes and "add" in p.classes
        assert "details" in p.tags  # a short unchanged run folds behind a click
    assert "198 unchanged lines" in rl.diff_html(d)
    far = before.replace("tensor<399xf32>", "tensor<399xf64>")
    assert "see the stage&#39;s IR" in rl.diff_html(rl.diff(before, far))  # a long run is only counted
    with pytest.raises(rl.ReactantLabError, match="side-by-side"):
        rl.diff_html(d, "sideways")


def test_diff_of_stages_and_bad_input(rng):
    t = rl.trace(lambda x: jnp.cos(x) * 2, rng.standard_normal(3, np.float32))
    stages = t.stages("canonicalize")
    assert rl.diff(t, stages.final).before_name == "before"
    with pytest.raises(rl.ReactantLabError, match="cannot diff a int"):
        rl.diff(3, "module {}")


def lcs_length(a: list[int], b: list[int]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=40), st.lists(st.integers(0, 4), max_size=40))
def test_align_is_a_valid_and_shortest_script(a, b):
    ops = align(a, b)
    rebuilt, equal, i, j = [], 0, 0, 0
    for tag, a0, a1, b0, b1 in ops:
        assert (a0, b0) == (i, j)
        if tag == "equal":
            assert a[a0:a1] == b[b0:b1]
            equal += a1 - a0
        rebuilt += b[b0:b1]
        i, j = a1, b1
    assert (i, j) == (len(a), len(b)) and rebuilt == b
    assert equal == lcs_length(a, b)  # small inputs get an exact LCS


def test_align_splits_large_gaps_and_stays_exact(monkeypatch, rng):
    """Past the bit-matrix bound gaps are halved (Hirschberg): the alignment stays an LCS.
    (Anchoring on lines unique to both sides, which align also does where they are plentiful,
    trades exactness for speed: it is switched off here.)"""
    import reactant_lab.analysis.align as al

    monkeypatch.setattr(al, "MAX_LCS_CELLS", 64)
    monkeypatch.setattr(al, "DENSE_ANCHORS", 0)  # never dense enough: no anchors
    r = random.Random(int(rng.integers(2**32)))
    a = [r.randrange(6) for _ in range(300)]
    b = [x for x in a if r.random() > 0.1] + [r.randrange(6) for _ in range(20)]
    ops = al.align(a, b)
    assert [x for t, a0, a1, b0, b1 in ops for x in b[b0:b1]] == b
    assert all(a[a0:a1] == b[b0:b1] for t, a0, a1, b0, b1 in ops if t == "equal")
    assert sum(a1 - a0 for t, a0, a1, *_ in ops if t == "equal") == lcs_length(a, b)
