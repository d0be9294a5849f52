"""Verification in every view: the payload's ``verification`` (against the schema), the report's
stage table (XLA compile, run, error columns, the first stage that went wrong marked), how a
notebook shows an Exploration (the explorer, with its HTML fallback), and a bisection's views."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.notebook.formatters import BUNDLE_VIEWS, HTML_VIEWS
from reactant_lab.notebook.widget import WIDGET_MIME
from reactant_lab.render.bisect_view import bisect_entry, bisect_html
from reactant_lab.render.payload import MIME_TYPE, check_entry
from reactant_lab.render.report import report_html
from reactant_lab.verify import StageCheck
from tests.test_payload_schema import problems
from tests.test_report import Page

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")


def clamped_update(z):
    """Miscompiled by slice_of_dynamic_update<1> (Reactant's list untouched: exact=True)."""
    return jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))[3:4]


@pytest.fixture(scope="module")
def verified() -> rl.Exploration:
    return rl.explore(lambda a: a * 2 + 1, np.linspace(0, 1, 12).reshape(3, 4), verify=True)


@pytest.fixture(scope="module")
def miscompiled() -> rl.Exploration:
    if not rl.enzyme_available():
        pytest.skip("needs enzyme-ad")
    # on the CPU, whose XLA clamps: the TPU's does not, under jax.jit either (the reference)
    return rl.explore(clamped_update, np.arange(4, dtype=np.float32) + 1, verify=True, exact=True,
                      device="cpu")


def test_a_verified_payload_carries_every_stage_check_and_validates(verified):
    payload = json.loads(json.dumps(rl.exploration_payload(verified)))
    assert problems(payload) == []
    v = payload["verification"]
    assert v["reference"] == "numpy" and v["reference_label"] == "NumPy eager"
    assert v["repeat"] == verified.verification.repeat and "float32" in v["tolerance"]
    assert [c["index"] for c in v["checks"]] == [s.index for s in verified.stages.stages]
    assert all(c["ok"] and c["compile_seconds"] > 0 and c["run_seconds"] > 0
               for c in v["checks"])
    assert v["first_wrong"] is None and v["slower_factor"] == 2.0
    assert any(c["same_as"] is not None for c in v["checks"])  # unchanged stages reuse figures


def test_a_payload_without_verification_has_none():
    ex = rl.explore(lambda a: a + 1, np.ones(3))
    payload = rl.exploration_payload(ex)
    assert "verification" not in payload
    assert "XLA compile</th><th>run" not in report_html(payload, script=False)


@needs_enzyme
def test_the_first_wrong_stage_is_named_in_the_payload_and_marked_in_the_report(miscompiled):
    payload = rl.exploration_payload(miscompiled)
    assert problems(json.loads(json.dumps(payload))) == []
    v = payload["verification"]
    wrong = v["checks"][v["first_wrong"]]
    assert v["first_wrong"] == 1 and wrong["ok"] is False and "1.5" in wrong["first_bad"]
    page = Page(report_html(payload, script=False))
    text = " ".join(page.text)
    for column in ("XLA compile", "run", "error"):
        assert column in text
    assert f"First stage that went wrong: 1 {wrong['name']}" in text
    # The row may also be marked first-slower: that one depends on the machine's load.
    assert any(tag == "tr" and k == "class" and {"changed", "first-wrong"} <= set(val.split())
               for tag, k, val in page.attrs)
    assert any(k == "title" and "tolerance" in val for _, k, val in page.attrs)


def test_non_finite_figures_become_null():
    c = check_entry(StageCheck(index=2, name="s", max_abs=math.inf, max_rel=math.nan, ok=False,
                               first_bad="result: got inf"))
    assert c["max_abs"] is None and c["max_rel"] is None and c["ok"] is False
    assert problems(c, "StageCheckEntry") == []


def test_the_notebook_shows_an_exploration_as_the_explorer(verified):
    """A cell ending with ``ex`` shows the live explorer; its output carries the payload (with
    the verification) and a script-free fallback with the verification's columns."""
    shown = BUNDLE_VIEWS[rl.Exploration](verified)
    data = shown[0] if isinstance(shown, tuple) else shown
    assert {WIDGET_MIME, MIME_TYPE, "text/html", "text/plain"} <= set(data)
    payload = json.loads(json.dumps(data[MIME_TYPE]))
    assert problems(payload) == [] and payload["verification"]["first_wrong"] is None
    html = data["text/html"]
    page = Page(html)
    assert "script" not in page.tags
    assert "XLA compile" in html and "Verified against NumPy eager" in html
    assert html.count('title="max abs') == len(verified.stages.stages)


@needs_enzyme
def test_a_bisection_renders_its_culprit_figures_diff_and_log(tmp_path):
    from reactant_lab.bisect import BisectResult, bisect

    result = bisect(clamped_update, np.arange(4, dtype=np.float32) + 1, exact=True,
                    progress=False, reproducer=tmp_path / "repro", device="cpu")
    entry = json.loads(json.dumps(bisect_entry(result)))
    assert problems(entry, "BisectEntry") == []
    assert entry["found"] and entry["patterns"] == ["slice_of_dynamic_update<1>"]
    assert entry["good"]["ok"] is True and entry["bad"]["ok"] is False
    assert "dynamic_update_slice" in entry["diff"] and entry["reference"] == "jax.jit"
    html = HTML_VIEWS[BisectResult](result)
    assert "slice_of_dynamic_update&lt;1&gt;" in html and "diff" in bisect_html(result)
    page = Page(html)
    assert "script" not in page.tags and "details" in page.tags
    text = " ".join(page.text)
    assert "Culprit for the result" in text and "without it" in text and "with it" in text
    assert str(tmp_path / "repro") in text and "log:" in text
