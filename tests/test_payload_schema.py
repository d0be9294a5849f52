"""The explorer payload against its one schema (reactant_lab/render/explorer.schema.json): payloads
of real explorations of every kind, the widget's status and answers, the copy a report embeds and
the payloads the committed notebooks saved all validate, and the schema refuses what it must."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import nbformat
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.examples import mlp
from reactant_lab.explore import ExploreOptions, build_from_text
from reactant_lab.notebook.display import explorer_payload
from reactant_lab.notebook.widget import ExplorerWidget
from reactant_lab.render.payload import (
    MIME_TYPE,
    SCHEMA_PATH,
    SCHEMA_VERSION,
    PayloadOptions,
    build_payload,
)
from reactant_lab.render.report import report_html
from reactant_lab.stages.runner import Stage, StageTrace
from tests.numpy_kernels import jacobi_1d
from tests.test_report import Page, big_stage_trace
from tests.test_widget import _mlp_args, send

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def problems(instance: object, definition: str | None = None) -> list[str]:
    """Every way ``instance`` breaks the schema (or one of its ``$defs``), as readable lines."""
    validator = VALIDATOR if definition is None else VALIDATOR.evolve(
        schema={"$ref": f"#/$defs/{definition}", "$defs": SCHEMA["$defs"]})
    def short(message: str) -> str:  # messages open with the offending value's repr
        return message if len(message) < 300 else f"{message[:120]} … {message[-160:]}"

    def leaves(error):  # a failed oneOf holds each branch's own reasons
        yield error
        for sub in error.context or ():
            yield from leaves(sub)

    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {short(e.message)}"
            for top in validator.iter_errors(instance) for e in leaves(top)]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    # Strict wherever the shape is fixed: every object schema closes its properties.
    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object" or "properties" in node:
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    open_objects = [o.get("title", sorted(o.get("properties", {}))) for o in objects(SCHEMA)
                    if "additionalProperties" not in o]
    assert not open_objects


@pytest.fixture(scope="module")
def mlp_exploration() -> rl.Exploration:
    return rl.explore(mlp, *_mlp_args(np.random.default_rng(0)))


@pytest.fixture(scope="module")
def payloads(mlp_exploration) -> dict[str, dict]:
    """Payloads of explorations of every kind the explorer shows."""
    a, b = np.linspace(0, 1, 12), np.zeros(12)
    kernel = rl.explore(jacobi_1d, 4, a, b, optimize="canonicalize")
    text = build_from_text(mlp_exploration.stages[0].ir, ExploreOptions(optimize="canonicalize"))
    by_pass = rl.explore(mlp, *_mlp_args(np.random.default_rng(1)), granularity="pass",
                         optimize="before_kernel", no_nan=True)
    result = rl.bench(mlp, *_mlp_args(np.random.default_rng(2)), presets=("all",),
                      baselines=("jax",), repeats=5, min_time=0.0, warmup=1, roofline=False,
                      progress=False)
    given = rl.calibrate(peak_flops=1e9, peak_flops_bf16=2e9, peak_bytes_per_s=1e9)
    copies = rl.bench(jacobi_1d, 4, a.copy(), b.copy(), presets=("canonicalize",),
                      baselines=("numpy",), repeats=3, min_time=0.0, warmup=1, roofline=given,
                      progress=False)
    big = build_payload(big_stage_trace(6, 3_000),
                        options=PayloadOptions(svg=False, compress_over=1_000, max_ops=50))
    return {"jax mlp": rl.exploration_payload(mlp_exploration),
            "numpy in-place kernel": rl.exploration_payload(kernel),
            "module text": rl.exploration_payload(text),
            "by pass, no_nan": rl.exploration_payload(by_pass),
            "benchmarked (widget)": ExplorerWidget(mlp_exploration, bench=result).payload,
            "benchmarked (display)": explorer_payload(mlp_exploration, bench=result),
            "benchmarked numpy kernel, copies apart": explorer_payload(kernel, bench=copies),
            "large texts, no layout program": big, "unparsable main": unparsable_payload(),
            "long diff": long_diff_payload()}


def long_diff_payload() -> dict:
    """Two stages 300 changed lines apart: the diff's HTML is cut, its rows are not."""
    body = [f"    %{i} = stablehlo.add %{i - 1}, %arg0 : tensor<1xf32>" for i in range(1, 301)]
    texts = ["module {\n  func.func public @main(%arg0: tensor<1xf32>) -> tensor<1xf32> {\n"
             "    %0 = stablehlo.abs %arg0 : tensor<1xf32>\n" + "\n".join(lines)
             + "\n    return %300 : tensor<1xf32>\n  }\n}\n"
             for lines in (body, [b.replace("add", "multiply") for b in body])]
    stages = tuple(Stage(index=i, name=f"s{i}", group=f"s{i}", pipeline="p" if i else "", ir=t,
                         seconds=0.001, changed=True,
                         op_counts={"stablehlo.add" if i == 0 else "stablehlo.multiply": 300})
                   for i, t in enumerate(texts))
    return build_payload(custom_trace(stages), options=PayloadOptions(svg=False))


def custom_trace(stages: tuple[Stage, ...]) -> StageTrace:
    """A StageTrace of made-up stages, as run_on_text would give for a custom pipeline."""
    return StageTrace(traced=None, optimize="custom", granularity="stage", no_nan=False,
                      target="cpu", stages=stages)


def unparsable_payload() -> dict:
    """A stage trace whose main the graph builder cannot read, with a stage whose passes were
    unavailable here."""
    text = "module {\n}\n"
    stages = (Stage(index=0, name="traced", group="traced", pipeline="", ir=text, seconds=0.001,
                    changed=True, op_counts={}),
              Stage(index=1, name="enzyme", group="enzyme", pipeline="enzyme", ir=text,
                    seconds=0.0, changed=False, op_counts={},
                    unavailable="enzyme-ad is not installed"))
    return build_payload(custom_trace(stages))


def test_payloads_of_every_kind_validate(payloads):
    for name, payload in payloads.items():
        assert problems(json.loads(json.dumps(payload))) == [], name


def test_the_cases_cover_what_the_schema_allows(payloads):
    """Each optional shape appears in some payload above, so each is validated for real."""
    ps = list(payloads.values())
    kernel = payloads["numpy in-place kernel"]
    assert kernel["meta"]["mode"] == "numpy" and kernel["signature"]["skipped"] == [["args[0]", "4"]]
    assert any(a["mutated"] for a in kernel["signature"]["args"])
    assert any(r["writes_back"] for r in kernel["signature"]["results"])
    assert payloads["module text"]["xla"] is None and payloads["module text"]["run"] is None
    assert payloads["module text"]["meta"]["mode"] is None
    assert payloads["by pass, no_nan"]["meta"]["no_nan"] is True
    assert {t["encoding"] for p in ps for t in p["texts"]} == {"plain", "gzip", "delta"}
    assert {g["kind"] for p in ps for g in p["graphs"]} == {"full", "summary", None}
    assert any(g.get("svg") is None and "dot" in g for p in ps for g in p["graphs"])
    assert {r[0] for p in ps for d in p["diffs"] for r in d["rows"]} == {"=", "-", "+", "~"}
    assert any(d["truncated"] for p in ps for d in p["diffs"])
    assert any(d.get("html") and "unified" not in d["html"] for p in ps for d in p["diffs"])
    # a notebook's copy (the widget's): diffs without html, graphs laid out from their model
    assert all("html" not in d for d in payloads["benchmarked (widget)"]["diffs"])
    assert any(s["unavailable"] for p in ps for s in p["stages"])
    bench = payloads["benchmarked (widget)"]
    assert [r["kind"] for r in bench["bench"]["rows"]] == ["preset", "baseline"]
    assert set(bench["run"]) >= {"median_seconds", "iqr_seconds", "samples",
                                 "jax_jit_median_seconds"}


def test_every_payload_carries_the_presets_and_its_diffs_html(payloads):
    for name, payload in payloads.items():
        assert payload["meta"]["presets"] == list(rl.PRESETS), name
        assert isinstance(payload["meta"]["no_nan"], bool), name
        if name != "benchmarked (widget)":  # a notebook's copy: the explorer reads rows
            assert all("html" in d for d in payload["diffs"]), name


def test_the_copy_a_report_embeds_validates(payloads):
    for name in ("jax mlp", "large texts, no layout program"):
        page = Page(report_html(payloads[name]))
        embedded = json.loads(page.scripts[0])
        assert problems(embedded) == [], name
        assert all("html" not in d for d in embedded["diffs"])
        assert embedded["texts"] == payloads[name]["texts"]


def test_the_widgets_status_and_answers_validate(mlp_exploration):
    w = ExplorerWidget(mlp_exploration)
    seen = [w.status]
    w.observe(lambda change: seen.append(change["new"]), names="status")
    send(w, {"command": "diff", "id": 1, "before": 0, "after": 2})
    answers = [w.result]
    send(w, {"command": "slice", "id": 2, "stage": 0, "result": "result"})
    answers.append(w.result)
    send(w, {"command": "diff", "id": 3, "before": 0, "after": 99})
    answers.append(w.result)
    send(w, {"command": "rerun", "optimize": "none", "granularity": "stage", "no_nan": False,
             "pipeline": None})
    send(w, {"command": "rerun", "optimize": "fastest", "granularity": "stage", "no_nan": False,
             "pipeline": None})
    assert [a["kind"] for a in answers] == ["diff", "slice", "error"]
    assert {s["state"] for s in seen} == {"idle", "running", "error"}
    for answer in answers:
        assert problems(answer, "ExplorerResult") == [], answer["kind"]
    for status in seen:
        assert problems(status, "ExplorerStatus") == [], status
    assert problems(w.payload) == []


def test_the_commands_the_front_end_sends_validate():
    commands = [{"command": "rerun", "optimize": "all", "granularity": "pass", "no_nan": True,
                 "pipeline": None},
                {"command": "diff", "id": 4, "before": 3, "after": 0},
                {"command": "slice", "id": 5, "stage": 1, "result": "result[0]"},
                {"command": "graph", "id": 6, "stage": 2, "compare": 0},
                {"command": "code", "id": 7, "kernel": "add_fusion", "what": "assembly"},
                {"command": "verify"}, {"command": "bisect", "metric": "runtime"}]
    for command in commands:
        assert problems(command, "ExplorerCommand") == [], command
    assert problems({"command": "explode", "id": 6}, "ExplorerCommand")
    assert problems({"command": "bisect", "metric": "speed"}, "ExplorerCommand")
    assert problems({"command": "code", "id": 8, "kernel": "k", "what": "ptx"}, "ExplorerCommand")


@pytest.mark.parametrize("name", ["01_quickstart", "02_numpy_kernels", "03_pass_by_pass",
                                  "04_benchmarking"])
def test_payloads_the_committed_notebooks_saved_validate(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    saved = [o["data"][MIME_TYPE] for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if MIME_TYPE in o.get("data", {})]
    assert saved
    for payload in saved:
        assert problems(payload) == []


def _broken(payload: dict, path: str, value: object = ...) -> dict:
    """``payload`` with the item at ``path`` (keys and indices joined by /) set, or removed."""
    out = copy.deepcopy(payload)
    *parents, last = [int(p) if re.fullmatch(r"\d+", p) else p for p in path.split("/")]
    node = out
    for p in parents:
        node = node[p]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


@pytest.mark.parametrize(("path", "value", "message"), [
    ("schema_version", 2, "1 was expected"),
    ("surprise", {}, "Additional properties are not allowed"),
    ("meta/optimise", "all", "Additional properties are not allowed"),
    ("meta/granularity", "op", "is not one of"),
    ("stages/0/text", ..., "'text' is a required property"),
    ("stages/1/changed", "yes", "is not of type 'boolean'"),
    ("texts/0/encoding", "zstd", "is not valid under any of the given schemas"),
    ("diffs/0/rows/0", ["?", 1, []], "is not valid under any of the given schemas"),
    ("diffs/0/html", {"side-by-side": "", "inline": ""}, "is not valid under any"),
    ("graphs/0/svg", ..., "'svg' is a dependency of 'dot'"),
    ("xla/hlo", "0", "is not of type 'integer'"),
    ("run/median", 1.0, "does not match any of the regexes"),
    ("signature/skipped", [["args[0]"]], "is too short"),
])
def test_the_schema_refuses_what_it_must(payloads, path, value, message):
    payload = payloads["jax mlp"]
    assert not problems(payload)
    found = problems(_broken(payload, path, value))
    assert any(message in p for p in found), found
