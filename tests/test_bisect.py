"""rl.bisect: the searches on synthetic predicates, a real wrong-result culprit found down to its
pattern pair, a correct program left alone, the reproducer's rerun, and bad arguments refused."""

from __future__ import annotations

import re

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab.bisect import BisectResult, bisect, ddmin, first_bad, rerun
from reactant_lab.errors import ReactantLabError, TraceError
from reactant_lab.render.bisect_view import bisect_entry, bisect_html

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(),
                                  reason="the enzyme-hlo pattern passes need enzyme-ad")

CULPRITS = {"scatter_op_canon<16>", "reshape_empty_broadcast<1>"}
"""What enzyme-ad's own default list does to ``x.at[1:3].add(1.0)``: together, and only together,
these two drop the addition (measured when the issue was filed)."""


# -- the searches, on synthetic predicates ------------------------------------------------------

def counted(bad):
    """``bad`` that records each set it is asked about."""
    asked: list[frozenset] = []

    def test(subset):
        asked.append(frozenset(subset))
        return bad(set(subset))
    return test, asked


@pytest.mark.parametrize("size", [1, 2, 7, 64, 300])
def test_ddmin_finds_a_single_culprit_and_tests_each_set_once(rng, size):
    culprit = int(rng.integers(size))
    test, asked = counted(lambda s: culprit in s)
    assert ddmin(list(range(size)), test) == (culprit,)
    assert len(asked) == len(set(asked))
    assert len(asked) <= 2 * max(1, size).bit_length() + 2


def test_ddmin_keeps_a_pair_that_is_bad_only_together(rng):
    items = [f"p{i}<1>" for i in range(120)]
    a, b = (items[i] for i in rng.choice(120, size=2, replace=False))
    test, asked = counted(lambda s: {a, b} <= s)
    found = ddmin(items, test)
    assert set(found) == {a, b}
    assert list(found) == sorted(found, key=items.index)  # the list's order is kept
    assert len(asked) == len(set(asked))


def test_ddmin_result_is_one_minimal_for_either_of_two_causes(rng):
    items = list(range(50))
    x, y, z = (int(i) for i in rng.choice(50, size=3, replace=False))
    def bad(s):
        return {x, y} <= set(s) or z in s
    found = set(ddmin(items, bad))
    assert bad(found)
    assert all(not bad(found - {item}) for item in found)


@pytest.mark.parametrize("count", [1, 2, 3, 10, 33])
def test_first_bad_is_a_binary_search(rng, count):
    answer = int(rng.integers(1, count + 1))
    asked: list[int] = []

    def bad(i):
        asked.append(i)
        return i >= answer
    assert first_bad(count, bad) == answer
    assert len(asked) <= max(1, (count - 1).bit_length())
    assert 0 not in asked and count not in asked  # both ends are known already


# -- real runs ---------------------------------------------------------------------------------

def add_slice(x):
    return x.at[1:3].add(1.0)


def enzyme_default_pipeline(x) -> str:
    """A custom pipeline: preset all with enzyme-ad's own default pattern list."""
    listed = [p for p in backend.transform_patterns(no_nan=False).split(";") if p]
    return rl.trace(add_slice, x).stages("all", patterns=listed).pipeline


@pytest.mark.cpu_only("it bisects a wrong result XLA:CPU gives for the pattern pair's module; "
                     "its rerun.py compiles for the CPU")
@needs_enzyme
def test_a_wrong_result_is_traced_to_its_pattern_pair(rng, tmp_path, capsys):
    x = rng.random(8).astype(np.float32)
    lines: list[str] = []
    result = bisect(add_slice, x, pipeline=enzyme_default_pipeline(x), metric="result",
                    reproducer=tmp_path / "repro", progress=lines.append)
    assert isinstance(result, BisectResult) and result.found
    assert set(result.patterns) == CULPRITS
    assert result.pass_name == "enzyme-hlo patterns" and result.stage == "custom"
    assert result.good is not None and result.good.ok
    assert result.bad is not None and result.bad.ok is False
    assert "result[" in (result.bad.first_bad or "")
    assert all(p in result.why and p in result.summary() for p in CULPRITS)
    assert result.before_ir != result.after_ir and "scatter" in result.before_ir
    assert result.tests == sum(1 for line in result.log if "->" in line and "failed" not in line)
    assert any("patterns" in line for line in lines)
    # Rerunning the culprit alone shows the wrong value: the added 1.0 is missing.
    assert result.reproducer == tmp_path / "repro"
    files = {p.name for p in result.reproducer.iterdir()}
    assert files >= {"before.mlir", "after.mlir", "pipeline.txt", "inputs.npz", "result.json",
                     "rerun.py"}
    capsys.readouterr()
    rerun(result.reproducer)
    printed = capsys.readouterr().out
    assert all(p in printed for p in CULPRITS)
    assert re.search(r"difference: max abs 1\b", printed), printed
    assert "values off" in printed and printed.count("result = [") == 2


@needs_enzyme
def test_a_correct_program_has_no_culprit(rng):
    x = rng.random((4, 3))
    result = bisect(lambda a: np.sin(a) * 2.0 + a.sum(), x, metric="result", reproducer=False,
                    progress=False)
    assert not result.found
    assert "not bad" in result.why and "Nothing to bisect" in result.why
    assert "exact=True" in result.why  # the exclusion table left patterns out
    assert result.pass_name is None and result.patterns == () and result.reproducer is None
    # nothing regressed, and every view says so (not "no single culprit")
    assert result.regressed is False
    assert "no regression" in str(result) and repr(result) == str(result)
    assert bisect_entry(result)["regressed"] is False
    html = bisect_html(result)
    assert "No regression in the result" in html and "No single culprit" not in html
    left_out = re.search(r"slow here \((.*)\); exact=True", result.why)  # a name may hold "()"
    assert left_out is not None
    names = left_out.group(1).split(", ")
    assert len(names) == len(set(names))  # each left-out pattern named once


# -- bad arguments -----------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "phrase"), [
    ({"metric": "speed"}, "unknown metric 'speed'"),
    ({"metric": "runtime", "threshold": 1.0}, "factor above 1"),
    ({"metric": "compile_time", "threshold": 0.5}, "factor above 1"),
    ({"metric": "result", "threshold": 3.0}, "threshold applies to"),
    ({"metric": "runtime", "repeat": 0}, "repeat must be a positive int"),
    ({"progress": "loud"}, "progress must be"),
])
def test_bad_arguments_are_refused_before_any_work(rng, kwargs, phrase):
    with pytest.raises(ReactantLabError, match=re.escape(phrase)):
        bisect(np.sin, rng.random(3), **kwargs)


def test_module_text_has_no_call_to_bisect(rng):
    x = rng.random(3).astype(np.float32)
    text = rl.trace(np.cos, x).as_text()
    for wrong in (text, rl.trace(np.cos, x)):
        with pytest.raises(TraceError, match="needs the Python function and its example"):
            bisect(wrong, x)

