"""Hostile names (function names, dict keys, string attributes) never come out unescaped."""

from __future__ import annotations

import functools
import json
import re
import xml.etree.ElementTree as ET

import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reactant_lab as rl
from reactant_lab.analysis.diff import Diff
from reactant_lab.render.payload import PayloadOptions, build_payload
from reactant_lab.render.report import explorer_front_end, report_html
from tests.test_report import Page

FRAGMENTS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "javascript:alert(1)",
             "'", '"', "&amp;", "\\", "\\l", "<", ">", "{", "}", "\n", "é", "]]>", "<!--"]
hostile = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), min_size=1,
                   max_size=4).map("".join).filter(lambda s: s.strip())
SVG_NS = "{http://www.w3.org/2000/svg}"


def assert_safe_html(html: str, names: list[str], markup: str) -> Page:
    """``html`` rendered with the hostile ``names``; ``markup`` the same rendering with harmless
    names, whose tags and script are the renderer's own."""
    page = Page(html)
    assert page.tags.count("script") == len(page.scripts) <= 2
    if page.scripts:  # the payload as data, then the explorer's own front end, nothing else
        json.loads(page.scripts[0])
        assert page.scripts[1] == explorer_front_end()[0]
        assert ("script", "type", "application/json") in page.attrs
    for tag, key, value in page.attrs:
        assert not key.startswith("on"), (tag, key)
        if key == "src":
            assert value.startswith("data:image/svg+xml;base64,")
        if key == "href":
            assert value.startswith("#")
    assert "img" not in [t for t in page.tags if t != "img"] and page.tags.count("img") == len(
        [a for a in page.attrs if a[1] == "src"])
    for name in names:
        if re.search(r"<[A-Za-z/!]", name):  # a name that would open a tag if left unescaped
            # no more often than in the renderer's own markup and script ("<a" is in its links,
            # "<s" in its spans): a name left unescaped would add to that
            assert html.count(name) == markup.count(name), name
    return page


def assert_safe_svg(svg: str, expected_text: list[str]) -> None:
    root = ET.fromstring(svg)  # well-formed: every label was escaped
    for el in root.iter():
        assert el.tag.replace(SVG_NS, "") not in ("script", "foreignObject", "a")
        assert not any(k.startswith("on") or k.endswith("href") for k in el.attrib)
    texts = {el.text for el in root.iter() if el.text}
    for text in expected_text:
        assert text in texts, text


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fn_name=hostile, key=hostile, out_key=hostile)
def test_hostile_names_in_report_and_graph(fn_name, key, out_key):
    traced, html = _named_report(fn_name, key, out_key)
    page = assert_safe_html(html, [fn_name, key, out_key], _named_report("f", "k", "o")[1])
    arg_path, res_path = traced.linear_args[0].path, traced.linear_results[0].path
    text = "".join(page.text)
    assert arg_path in text and res_path in text and fn_name.strip() in text
    (svg,) = page.svgs()
    assert_safe_svg(svg, [arg_path, res_path])


@functools.lru_cache(maxsize=2)
def _named_report(fn_name: str, key: str, out_key: str) -> tuple[rl.Traced, str]:
    def f(params, x):
        return {out_key: jnp.sin(params[key] * x)}

    f.__name__ = fn_name
    traced = rl.trace(f, {key: np.ones(3, np.float32)}, np.ones(3, np.float32))
    payload = build_payload(traced.stages("canonicalize"), traced=traced,
                            options=PayloadOptions(max_graphs=1))
    return traced, report_html(payload)


def mlir_string(value: str) -> str:
    """A string literal as MLIR prints it: printable ASCII kept, every other byte as \\XX."""
    out = []
    for byte in value.encode():
        ch = chr(byte)
        out.append(ch if 32 <= byte < 127 and ch not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


@settings(max_examples=30, deadline=None)
@given(value=hostile)
def test_hostile_string_attributes_in_diffs(value):
    d, literal = _attribute_diff(value)
    assert d.changed == 1
    for layout in ("side-by-side", "unified"):
        page = assert_safe_html(rl.diff_html(d, layout), [value], _harmless_diff_html(layout))
        assert literal in "".join(page.text)


@functools.cache
def _harmless_diff_html(layout: str) -> str:
    """The diff of ``_attribute_diff`` with a harmless value, rendered: the renderer's own
    markup."""
    return rl.diff_html(_attribute_diff("x")[0], layout)


def _attribute_diff(value: str) -> tuple[Diff, str]:
    """The diff of a module gaining a string attribute of ``value``, and its literal."""
    literal = mlir_string(value)
    before = ("module {\n  func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {\n"
              "    %0 = stablehlo.custom_call @f(%arg0) : (tensor<f32>) -> tensor<f32>\n"
              "    return %0 : tensor<f32>\n  }\n}\n")
    after = before.replace("@f(%arg0)", f"@f(%arg0) {{backend_config = {literal}}}")
    return rl.diff(before, after), literal


def test_hostile_names_through_explore_to_html(rng):
    name = '"><img src=x onerror=alert(1)><script>alert(2)</script>javascript:alert(3)'

    def f(params, x):
        return {name: jnp.tanh(params[name] @ x)}

    f.__name__ = name
    ex = rl.explore(f, {name: rng.standard_normal((3, 3), np.float32)},
                    rng.standard_normal(3, np.float32), optimize="canonicalize")
    page = assert_safe_html(rl.exploration_html(ex), [name], "")  # whole tags: never there
    for (tag, key, value) in page.attrs:
        assert "javascript:" not in value or tag == "script", (tag, key)
    (svg,) = page.svgs()
    assert_safe_svg(svg, [ex.traced.linear_args[0].path])
    assert_safe_svg(rl.graph_svg(ex), [ex.traced.linear_results[0].path])
