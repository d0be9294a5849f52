"""The live explorer widget without a browser: its synced state, each front-end command sent
through the widget's message path, progress and error states, and its display bundle."""

from __future__ import annotations

import json

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.examples import mlp
from reactant_lab.explore import ExploreOptions, build_from_text
from reactant_lab.notebook import widget as widget_mod
from reactant_lab.notebook.widget import ExplorerWidget
from reactant_lab.render.payload import MIME_TYPE
from reactant_lab.render.texts import decode_text

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _mlp_args(rng: np.random.Generator) -> tuple:
    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    params = {"w1": w(16, 32), "b1": w(32), "w2": w(32, 32), "b2": w(32), "w3": w(32, 4),
              "b3": w(4)}
    return params, rng.standard_normal((8, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def exploration() -> rl.Exploration:
    return rl.explore(mlp, *_mlp_args(np.random.default_rng()))


def send(w: ExplorerWidget, content: dict) -> None:
    """Deliver a message as the front end's ``model.send(content)`` arrives in the kernel."""
    w._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def statuses(w: ExplorerWidget) -> list[dict]:
    seen: list[dict] = []
    w.observe(lambda change: seen.append(change["new"]), names="status")
    return seen


def test_state_is_the_payload_and_round_trips_through_json(exploration):
    w = ExplorerWidget(exploration)
    assert w.status == {"state": "idle", "message": "", "progress": None}
    assert "render" in w._esm and w._esm == widget_mod.BUNDLE.read_text()
    state = json.loads(json.dumps(w.get_state()))
    payload = state["payload"]
    assert payload == w.payload and payload["schema_version"] == 1
    # the MLIR stages, then XLA's own
    assert [s["name"] for s in payload["stages"]] == [s.name for s in exploration.all_stages]
    for entry, stage in zip(payload["stages"], exploration.all_stages, strict=True):
        assert decode_text(payload["texts"], entry["text"]) == stage.as_text()
    other = ExplorerWidget(exploration)
    other.set_state({"payload": payload, "status": state["status"], "result": state["result"]})
    assert other.payload == w.payload and other.status == w.status


def test_display_bundle_carries_the_widget_view_and_the_saved_explorer(exploration):
    w = ExplorerWidget(exploration)
    data, _metadata = w._repr_mimebundle_()
    assert set(data) == {WIDGET_MIME, MIME_TYPE, "text/html", "text/plain"}
    assert data[WIDGET_MIME]["model_id"] == w.model_id
    assert data[MIME_TYPE] == w.payload
    assert "mlp" in data["text/plain"] and "<script" not in data["text/html"].lower()


def test_diff_of_any_two_stages_answers_with_rows_into_the_payload_texts(exploration):
    w = ExplorerWidget(exploration)
    last = len(exploration.stages.stages) - 1
    send(w, {"command": "diff", "id": 7, "before": last, "after": 0})
    assert w.result["id"] == 7 and w.result["kind"] == "diff"
    entry = w.result["data"]
    want = rl.diff(exploration.stages[last], exploration.stages[0])
    assert (entry["added"], entry["removed"], entry["changed"]) == (want.added, want.removed,
                                                                     want.changed)
    assert (entry["before"], entry["after"]) == (last, 0) and not entry["empty"]
    before = decode_text(w.payload["texts"], w.payload["stages"][last]["text"]).split("\n")
    after = decode_text(w.payload["texts"], w.payload["stages"][0]["text"]).split("\n")
    changed = [r for r in entry["rows"] if r[0] == "~"]
    assert changed and all(before[r[1] - 1] != after[r[2] - 1] for r in changed)
    added = [r for r in entry["rows"] if r[0] == "+"]
    assert all(after[r[1] - 1].strip() for r in added)


def test_slice_answers_with_the_graph_of_one_result(exploration):
    w = ExplorerWidget(exploration)
    send(w, {"command": "slice", "id": 3, "stage": 0, "result": "result"})
    assert w.result["id"] == 3 and w.result["kind"] == "slice"
    data = w.result["data"]
    assert (data["stage"], data["result"]) == (0, "result")
    assert data["svg"].lstrip().startswith("<svg") and "depends on" in data["svg"]


@pytest.mark.slow("a module past the graph cap: 10,000 ops")
def test_graph_answers_with_the_whole_model_of_a_stage_past_the_payload_cap():
    """A module over the payload's graph cap: the live explorer asks for the stage's model, to
    draw it whole or one result's slice of it in the page."""
    from reactant_lab.analysis.graph_model import MODEL_MAX_OPS
    from tests.test_payload_schema import problems

    n = MODEL_MAX_OPS + 10
    body = "".join(f"    %{i} = stablehlo.add %{i - 1}, %arg0 : tensor<4xf32>\n" for i in range(1, n))
    text = ("module {\n  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, "
            "tensor<4xf32>) {\n    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n" + body
            + f"    return %{n - 1}, %{n // 2} : tensor<4xf32>, tensor<4xf32>\n  }}\n}}\n")
    w = ExplorerWidget(build_from_text(text, ExploreOptions(optimize="none")))
    assert all("model" not in g for g in w.payload["graphs"])  # over the cap: the summary only
    send(w, {"command": "graph", "id": 8, "stage": 0})
    assert w.result["id"] == 8 and w.result["kind"] == "graph"
    data = json.loads(json.dumps(w.result["data"]))
    assert problems(data, "GraphData") == []
    model = data["model"]
    assert model["ops"] == n and data["stage"] == 0
    assert len([x for x in model["nodes"] if x["kind"] == "result"]) == 2


def test_graph_with_compare_answers_with_both_models_and_their_graph_diff(exploration):
    """The graph tab's "changes from" past the payload's cap: both stages' models and the
    graph diff of the two, the earlier stage first, as the payload would hold them."""
    from reactant_lab.analysis.graph_diff import graph_diff_entry
    from tests.test_payload_schema import problems

    w = ExplorerWidget(exploration)
    last = len(exploration.stages.stages) - 1
    send(w, {"command": "graph", "id": 9, "stage": 0, "compare": last})
    assert w.result["id"] == 9 and w.result["kind"] == "graph"
    data = json.loads(json.dumps(w.result["data"]))
    assert problems(data, "GraphData") == []
    assert (data["stage"], data["compare"]) == (0, last)
    diff = data["diff"]
    assert (diff["before"], diff["after"]) == (0, last)
    assert diff == graph_diff_entry(0, last, data["model"], data["compare_model"])
    assert diff["removed"] or diff["added"] or diff["changed"]  # the pipeline changed the graph
    send(w, {"command": "graph", "id": 10, "stage": 0, "compare": 99})
    assert w.result["kind"] == "error" and "no stage 99" in w.result["data"]["message"]


@pytest.mark.parametrize(("content", "message"), [
    ({"command": "graph", "id": 7, "stage": 12}, "no stage 12"),
    ({"command": "diff", "id": 4, "before": 0, "after": 99}, "no stage 99"),
    ({"command": "slice", "id": 5, "stage": 0, "result": "result[7]"}, "no result 'result[7]'"),
    ({"command": "explode", "id": 6}, "unknown explorer command 'explode'"),
])
def test_a_failing_request_answers_with_an_error_naming_the_problem(exploration, content,
                                                                     message):
    w = ExplorerWidget(exploration)
    send(w, content)
    assert w.result["id"] == content["id"] and w.result["kind"] == "error"
    assert message in w.result["data"]["message"]
    assert "Traceback" not in w.result["data"]["message"]
    assert w.status["state"] == "idle"


def test_rerun_with_another_preset_reports_progress_then_replaces_the_payload(exploration):
    w = ExplorerWidget(exploration)
    seen = statuses(w)
    send(w, {"command": "rerun", "optimize": "none", "granularity": "stage", "no_nan": False,
             "pipeline": None})
    states = [s["state"] for s in seen]
    assert states[-1] == "idle" and set(states[:-1]) == {"running"} and len(states) >= 3
    progress = [s["progress"] for s in seen[:-1]]
    assert progress == sorted(progress) and all(0 < p < 1 for p in progress)
    assert "preset none" in seen[-1]["message"]
    assert w.payload["meta"]["optimize"] == "none"
    # fewer of the pipeline's stages (the payload's also lists XLA's, nine on a TPU)
    assert len(w.exploration.stages.stages) < len(exploration.stages.stages)
    assert w.exploration.stages.optimize == "none"


def test_a_rerun_sends_the_bundle_the_notebook_saves_and_redisplays_it(exploration):
    w = ExplorerWidget(exploration)
    assert w.saved == {}  # the cell's own output holds the first run's bundle
    order = []
    w.observe(lambda change: order.append(change["name"]), names=["saved", "payload"])
    send(w, {"command": "rerun", "optimize": "none", "granularity": "stage", "no_nan": False,
             "pipeline": None})
    assert order == ["saved", "payload"]  # the front end saves both when the payload changes
    assert set(w.saved) == {"text/html", "text/plain"}
    assert "optimize=none" in w.saved["text/html"] and "<script" not in w.saved["text/html"]
    assert "traced" in w.saved["text/plain"]
    data, _ = w._repr_mimebundle_()
    assert data[MIME_TYPE] == w.payload and "optimize=none" in data["text/html"]


def test_rerun_by_pass_and_with_a_pipeline(exploration):
    w = ExplorerWidget(exploration)
    send(w, {"command": "rerun", "optimize": "all", "granularity": "pass", "no_nan": True,
             "pipeline": ""})
    assert w.payload["meta"]["granularity"] == "pass"
    assert len(w.payload["stages"]) > len(exploration.stages.stages)
    send(w, {"command": "rerun", "optimize": "all", "granularity": "stage", "no_nan": False,
             "pipeline": "canonicalize,cse"})
    assert w.payload["meta"]["optimize"] == "custom"
    mlir = w.payload["xla"]["passes"]["first"]  # XLA's own stages follow
    assert [s["pipeline"] for s in w.payload["stages"][1:mlir]] == ["canonicalize,cse"]


@pytest.mark.skipif(not rl.enzyme_available(), reason="the exclusion table applies to enzyme-hlo")
def test_rerun_in_reactant_exact_mode_runs_the_list_untouched_and_says_so(exploration):
    w = ExplorerWidget(exploration)
    assert w.payload["meta"]["exact"] is False
    send(w, {"command": "rerun", "optimize": "all", "granularity": "stage", "no_nan": False,
             "exact": True, "pipeline": None})
    assert w.status["state"] == "idle" and "(Reactant exact)" in w.status["message"]
    assert w.payload["meta"]["exact"] is True and w.exploration.options.exact
    notes = [s["unavailable"] or "" for s in w.payload["stages"]]
    assert any("exact: Reactant's list untouched" in n for n in notes)
    send(w, {"command": "rerun", "optimize": "all", "granularity": "stage", "no_nan": False,
             "pipeline": None})  # without the field: as the payload was made
    assert w.payload["meta"]["exact"] is True
    send(w, {"command": "rerun", "optimize": "all", "granularity": "stage", "no_nan": False,
             "exact": False, "pipeline": None})
    assert w.payload["meta"]["exact"] is False


def test_rerun_error_sets_a_readable_error_status_and_keeps_the_explorer(exploration):
    w = ExplorerWidget(exploration)
    before = w.payload
    send(w, {"command": "rerun", "optimize": "fastest", "granularity": "stage",
             "no_nan": False, "pipeline": None})
    assert w.status["state"] == "error"
    assert w.status["message"].startswith("UnknownPresetError: unknown optimize preset 'fastest'")
    assert "Traceback" not in w.status["message"] and w.payload == before
    send(w, {"command": "rerun", "optimize": "all", "granularity": "stage", "no_nan": False,
             "pipeline": "no-such-pass"})
    assert w.status["state"] == "error" and "no-such-pass" in w.status["message"]


def test_rerun_uses_the_callers_rerun(exploration):
    calls = []

    def rerun(optimize, granularity, no_nan, pipeline):
        calls.append((optimize, granularity, no_nan, pipeline))
        stages = exploration.traced.stages("canonicalize")
        return rl.Exploration(traced=exploration.traced, stages=stages, compiled=stages.compile())

    w = ExplorerWidget(exploration, rerun=rerun)
    send(w, {"command": "rerun", "optimize": "just_batch", "granularity": "pass",
             "no_nan": True, "pipeline": " "})
    assert calls == [("just_batch", "pass", True, None)]
    assert w.payload["meta"]["optimize"] == "canonicalize" and w.status["state"] == "idle"


def test_module_text_explorer_slices_and_reruns_on_its_text(exploration):
    text = exploration.stages[0].ir
    w = ExplorerWidget(build_from_text(text, ExploreOptions(optimize="canonicalize")))
    assert w.payload["meta"]["function"] == "module"
    send(w, {"command": "slice", "id": 1, "stage": 1, "result": 0})
    assert w.result["kind"] == "slice" and "<svg" in w.result["data"]["svg"]
    send(w, {"command": "rerun", "optimize": "all", "granularity": "pass", "no_nan": False,
             "pipeline": None})
    assert w.status["state"] == "idle", w.status
    assert w.exploration.from_text and w.exploration.compiled is None
    assert w.payload["meta"]["optimize"] == "all" and w.payload["meta"]["granularity"] == "pass"


def test_bench_rows_reach_the_payload(exploration):
    args = _mlp_args(np.random.default_rng())
    result = rl.bench(mlp, *args, presets=("all",), baselines=("jax",), repeats=5, min_time=0.0,
                      warmup=1, roofline=False, progress=False)
    w = ExplorerWidget(exploration, bench=result)
    assert [r["name"] for r in w.payload["bench"]["rows"]] == ["all", "jax"]
    assert w.payload["run"]["median_seconds"] == result.row("all").median_s


def test_missing_front_end_says_to_reinstall(exploration, monkeypatch, tmp_path):
    monkeypatch.setattr(widget_mod, "BUNDLE", tmp_path / "widget.js")
    with pytest.raises(rl.ReactantLabError, match="Reinstall reactant_lab"):
        ExplorerWidget(exploration)


def _double(a):
    return a * 2 + 1


def test_verify_without_the_call_says_how_to_get_it(exploration):
    w = ExplorerWidget(exploration)
    send(w, {"command": "verify"})
    assert w.status["state"] == "error" and "example=(fn, args, kwargs)" in w.status["message"]
    assert "verification" not in w.payload


def test_verify_adds_the_columns_and_a_rerun_keeps_them():
    x = np.linspace(0, 1, 6)
    w = ExplorerWidget(rl.explore(_double, x), example=(_double, (x,), {}))
    seen = statuses(w)
    send(w, {"command": "verify"})
    assert w.status["state"] == "idle", w.status
    assert "every stage matches" in w.status["message"]
    assert any(s["state"] == "running" and "verifying" in s["message"] for s in seen)
    v = w.payload["verification"]
    assert len(v["checks"]) == w.payload["xla"]["passes"]["first"] and v["first_wrong"] is None
    send(w, {"command": "rerun", "optimize": "none", "granularity": "stage", "no_nan": False,
             "pipeline": None})
    assert w.status["state"] == "idle" and len(w.payload["verification"]["checks"]) == 1


@pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")
def test_find_culprit_runs_a_bisection_with_the_explorers_options(tmp_path, monkeypatch):
    import jax
    import jax.numpy as jnp

    def clamped(z):
        return jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))[3:4]

    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path))
    z = np.arange(4, dtype=np.float32) + 1
    # on the CPU, whose XLA clamps: the TPU's does not, under jax.jit either (the reference)
    w = ExplorerWidget(rl.explore(clamped, z, exact=True, device="cpu"),
                       example=(clamped, (z,), {}))
    seen = statuses(w)
    send(w, {"command": "bisect", "metric": "result"})
    assert w.status["state"] == "idle", w.status
    assert w.bisect["found"] and w.bisect["patterns"] == ["slice_of_dynamic_update<1>"]
    assert any("find culprit (result):" in s["message"] for s in seen if s["state"] == "running")
    assert z.tolist() == [1, 2, 3, 4]
    send(w, {"command": "bisect", "metric": "speed"})
    assert w.status["state"] == "error" and "unknown metric 'speed'" in w.status["message"]


def test_each_run_command_changes_the_status_even_when_it_fails_the_same_way(exploration):
    # The front end takes a run command met with silence for a kernel that is gone.
    w = ExplorerWidget(exploration)
    seen = statuses(w)
    send(w, {"command": "verify"})
    send(w, {"command": "verify"})
    assert [s["state"] for s in seen] == ["running", "error", "running", "error"]
    assert seen[1] == seen[3]
