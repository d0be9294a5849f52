"""A sharded call's explorer in a real JupyterLab (Chromium), saved without a kernel: the graph
of the compiled stage tints values by sharding under a legend naming the mesh, outlines the ops
XLA's partitioner put collectives after (⇄, listed in the node's panel), and the XLA tab shows
the partitioned executable: its devices, collectives and memory per device."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.test_graph_browser import _saved
from tests.test_sharding import run_on_devices
from tests.test_sharding_view import CHAIN


@pytest.fixture(scope="module")
def sharded_payload(tmp_path_factory) -> dict:
    """A tensor-parallel chain over a 2x4 mesh with the sharding stages, built with 8
    simulated devices in a subprocess."""
    path = tmp_path_factory.mktemp("sharded") / "payload.json"
    run_on_devices(CHAIN + f"""
    from reactant_lab.render.payload import notebook_payload
    open({str(path)!r}, "w").write(json.dumps(notebook_payload(p)))
    """)
    return json.loads(path.read_text())


def test_sharded_graph_and_partitioned_executable(jupyterlab_server, lab_page, sharded_payload):
    page = lab_page
    xla = sharded_payload["xla"].get("passes")
    # the compiled (last MLIR) stage; XLA's own stages follow it
    last = (xla["first"] if xla else len(sharded_payload["stages"])) - 1
    explorer = _saved(jupyterlab_server, page, "sharded.ipynb", sharded_payload)
    explorer.locator(f'.rl-stage-table tr[data-stage="{last}"]').click()
    explorer.locator(".rl-tab-graph").click()
    legend = explorer.locator(".rl-graph-legend")
    expect(legend).to_be_visible()
    expect(legend).to_contain_text("mesh data=2, model=4")
    expect(legend).to_contain_text("[{data}, {model}]")
    expect(legend).to_contain_text("collectives between devices")
    # Each value's sharding on its box, tinted; the same sharding, the same tint.
    tanh = explorer.locator(".rl-gsvg .rl-gn.k-op", has_text="tanh").first
    expect(tanh).to_contain_text("⟨{data}, {model}⟩")
    tint = [c for c in tanh.get_attribute("class").split() if c.startswith("rl-sh-")]
    assert tint, tanh.get_attribute("class")
    first_dot = explorer.locator(".rl-gsvg .rl-gn.k-op", has_text="dot_general").first
    assert tint[0] in first_dot.get_attribute("class").split()
    # The op XLA all-reduces after: outlined, labelled, listed in its panel.
    marked = explorer.locator(".rl-gsvg .rl-gn.m-collective")
    expect(marked.first).to_be_visible()
    assert "⇄ all-reduce" in marked.first.get_attribute("aria-label")
    marked.first.click()
    panel = explorer.locator(".rl-gpanel")
    expect(panel.locator(".rl-gp-sharding")).to_contain_text("[{")
    expect(panel.locator(".rl-gp-coll").first).to_contain_text("all-reduce")
    # The partitioned executable.
    explorer.locator(".rl-tab-xla").click()
    pane = explorer.locator(".rl-xla-facts")
    expect(pane).to_contain_text("Partitioned over 8 devices")
    expect(pane).to_contain_text("mesh data=2, model=4")
    counts = sharded_payload["xla"]["sharding"]["counts"]
    expect(pane).to_contain_text(f"{counts['all-reduce']} all-reduce")
    expect(pane).to_contain_text("memory per device")
