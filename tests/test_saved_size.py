"""What one explorer adds to a saved notebook (benchmarks/saved_size.py prints it): the display
bundle of ``%%reactant_jit --bench`` for an in-place NumPy heat stencil is at most 300 KB, XLA's
own stages included, with the payload trimmed to what the explorer reads and the HTML fallback
in brief."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import reactant_lab as rl
from reactant_lab.notebook.display import explorer_bundle
from reactant_lab.render.payload import MIME_TYPE, notebook_payload
from reactant_lab.render.texts import decode_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from saved_size import TARGET_BYTES, heat, saved_bytes


def test_the_default_stencil_explorer_saves_in_at_most_300_kb():
    u = np.random.default_rng(0).random((200, 200))
    ex = rl.explore(heat, u.copy(), 20)
    b = rl.bench(heat, u.copy(), 20, presets=("none", "all"), repeats=3, progress=False)
    bundle = explorer_bundle(ex, bench=b)
    assert saved_bytes(bundle) <= TARGET_BYTES == 300_000
    payload = bundle[MIME_TYPE]
    # what the explorer reads is all there: every stage's text (XLA's own stages after the
    # MLIR ones), diffs' rows, graph models
    assert ex.xla_stages and len(payload["stages"]) == len(ex.all_stages)
    assert payload["xla"]["passes"]["first"] == len(ex.stages.stages)
    for entry, stage in zip(payload["stages"], ex.all_stages, strict=True):
        assert decode_text(payload["texts"], entry["text"]) == stage.as_text()
    assert all("html" not in d for d in payload["diffs"])
    assert any(d["rows"] for d in payload["diffs"])
    assert all(g.get("model") for g in payload["graphs"])
    assert notebook_payload(payload) == payload  # trimming twice changes nothing
    # the fallback: the stage table, the traced and the final IR, their diff, a graph, the bench
    html = bundle["text/html"]
    for part in ("<h2>Stages</h2>", "Traced IR", "Final IR", "Traced &rarr; final", "<img",
                 "<h2>Benchmark</h2>", "stablehlo.while"):
        assert part in html, part
    json.loads(json.dumps(bundle))
