"""Source provenance: each op of each stage back to the Python line it was traced from (real traces
of a NumPy kernel, a JAX function and a rolled loop; synthetic call-site and fused locations), a
line's ops across stages (``Exploration.ops_for_line``), and the payload's compact ``provenance``."""

from __future__ import annotations

import inspect
import json
import re

import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.analysis.provenance import (
    Source,
    is_library_file,
    op_frames,
    op_name,
    op_source_sets,
    op_sources,
    ops_for_line,
)
from reactant_lab.notebook.display import explorer_payload, relabel_files
from reactant_lab.render.source_map import provenance_entry
from tests.test_payload_schema import problems

HERE = __file__


def _line_of(fn, marker: str) -> int:
    """The file line of ``fn``'s source line that holds ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def numpy_kernel(A, B):
    B[1:-1] = A[1:-1] * 2.0  # @scale
    A[:] = np.sin(B)  # @sine


def jax_fn(x, y):
    a = jnp.cos(x)  # @cos
    b = a * y + 1.0  # @fma
    return jnp.sum(b)  # @sum


def loop_kernel(u, steps):
    for _ in range(steps):  # @for
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - u[:-2])  # @body


def _ops_by_name(ir: str) -> dict[int, str]:
    shown = strip_locations(ir).splitlines()
    return {n: op_name(line) for n, line in enumerate(shown, 1)}


def _here(sources: dict[int, Source]) -> dict[int, int]:
    return {n: s.line for n, s in sources.items() if s.file == HERE}


def test_numpy_kernel_ops_map_to_their_lines():
    ex = rl.explore(numpy_kernel, np.ones(8), np.ones(8), run=False)
    scale, sine = _line_of(numpy_kernel, "@scale"), _line_of(numpy_kernel, "@sine")
    ir = ex.stages[0].ir
    names = _ops_by_name(ir)
    lines = _here(op_sources(ir))
    assert {names[n] for n, k in lines.items() if k == sine} >= {"stablehlo.sine"}
    assert "stablehlo.multiply" in {names[n] for n, k in lines.items() if k == scale}
    # every op of the kernel's body is attributed to one of its two lines (constants and the
    # return may name the call site, this test's own explore line)
    body = {k for n, k in lines.items() if names[n] not in ("stablehlo.constant", "func.return")}
    assert body <= {scale, sine, _line_of(test_numpy_kernel_ops_map_to_their_lines, "rl.explore")}
    for s in op_sources(ir).values():
        assert not is_library_file(s.file)
        assert s.col > 0


def test_jax_function_ops_map_to_their_lines():
    ex = rl.explore(jax_fn, jnp.ones(4), jnp.ones(4), run=False)
    ir = ex.stages[0].ir
    names = _ops_by_name(ir)
    lines = _here(op_sources(ir))
    by_line: dict[int, set[str]] = {}
    for n, k in lines.items():
        by_line.setdefault(k, set()).add(names[n])
    assert "stablehlo.cosine" in by_line[_line_of(jax_fn, "@cos")]
    assert "stablehlo.multiply" in by_line[_line_of(jax_fn, "@fma")]
    assert "stablehlo.add" in by_line[_line_of(jax_fn, "@fma")]
    assert "stablehlo.reduce" in by_line[_line_of(jax_fn, "@sum")]
    # the keys are lines of the text as displayed (locations stripped)
    shown = strip_locations(ir).splitlines()
    for n in lines:
        assert " loc(#" not in shown[n - 1] and shown[n - 1].strip()


def test_ops_for_line_across_stages():
    ex = rl.explore(jax_fn, jnp.ones(4), jnp.ones(4), run=False)
    cos = _line_of(jax_fn, "@cos")
    found = ex.ops_for_line(cos)
    # the MLIR stages, then XLA's (whose ops are HLO instructions)
    assert len(found) == len(ex.all_stages) > len(ex.stages.stages)
    assert [s.index for s in found] == list(range(len(found)))
    assert all(s.name == st.name for s, st in zip(found, ex.all_stages, strict=True))
    for stage in found:
        xla = stage.index >= len(ex.stages.stages)
        assert [o.op for o in stage] == (["cosine"] if xla else ["stablehlo.cosine"])
        shown = ex.stage(stage.index).as_text().splitlines()
        for op in stage:
            assert shown[op.line - 1].strip() == op.text
            assert op.sources[0].line == cos
    assert found.summary().startswith(f"line {cos}: 1 op in traced, 1 in ")
    assert "stage 0 traced: 1 stablehlo.cosine" in repr(found)
    # a bare file name, and a line with no op
    assert len(ex.ops_for_line(cos, file="test_provenance.py")[0]) == 1
    assert all(len(s) == 0 for s in ex.ops_for_line(cos - 1))
    assert ex.source_file == HERE


def test_a_call_line_holds_the_ops_of_the_call():
    def helper(v):
        return jnp.exp(v)  # @exp

    def outer(x):
        return helper(x) * 2.0  # @call

    ex = rl.explore(outer, jnp.ones(3), run=False)
    call, exp = _line_of(outer, "@call"), _line_of(helper, "@exp")
    ops = {o.op for o in ex.ops_for_line(call)[0]}
    assert {"stablehlo.exponential", "stablehlo.multiply"} <= ops
    assert {o.op for o in ex.ops_for_line(exp)[0]} == {"stablehlo.exponential"}
    chains = [c for found in op_frames(ex.stages[0].ir).values() for c in found]
    assert any([f.line for f in c[:2]] == [exp, call] for c in chains)


def test_a_rolled_loop_body_maps_to_its_lines():
    ex = rl.explore(loop_kernel, np.ones(16), 5, run=False, trace_scalars=True)
    body, head = _line_of(loop_kernel, "@body"), _line_of(loop_kernel, "@for")
    traced = ex.stages[0].ir
    assert "stablehlo.while" in traced
    lines = _here(op_sources(traced))
    names = _ops_by_name(traced)
    assert {names[n] for n, k in lines.items() if k == head} >= {"stablehlo.while"}
    in_body = {names[n] for n, k in lines.items() if k == body}
    assert {"stablehlo.subtract", "stablehlo.multiply", "stablehlo.add"} <= in_body
    found = ex.ops_for_line(body)
    last = found[len(ex.stages.stages) - 1]
    assert len(last) > 0 and "stablehlo.subtract" in last.counts()
    # XLA's optimized HLO: the body's ops inside the loop, fused, still name the line
    assert {"subtract", "multiply", "fusion"} <= set(found[-1].counts())


SYNTHETIC = """\
#loc1 = loc("/home/u/a.py":5:7 to :20)
module @m {
  func.func public @main(%arg0: tensor<4xf32> loc("args[0]")) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32> loc(#loc5)
    %1 = stablehlo.multiply %0, %0 : tensor<4xf32> loc(fused[#loc3, #loc4])
    %2 = stablehlo.sine %1 : tensor<4xf32> loc(callsite("f"("/home/u/a.py":3:1) at "/home/u/b.py":9:2))
    %3 = stablehlo.cosine %2 : tensor<4xf32> loc("/x/site-packages/jax/_src/numpy/ufuncs.py":1:1)
    %4:2 = stablehlo.while(%iterArg = %3, %iterArg_0 = %2) : tensor<4xf32>, tensor<4xf32>
    cond {
      %c = stablehlo.constant dense<true> : tensor<i1> loc(#loc)
      stablehlo.return %c : tensor<i1> loc(#loc)
    } do {
      %5 = stablehlo.negate %iterArg : tensor<4xf32> loc(fused<"pass">[#loc2, "/home/u/a.py":8:1])
      stablehlo.return %5, %iterArg_0 : tensor<4xf32>, tensor<4xf32> loc(#loc)
    } loc(#loc7)
    %6 = "stablehlo.abs"(%4#0) {name = "}"} : (tensor<4xf32>) -> tensor<4xf32> loc(#loc2)
    return %6 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/home/u/a.py":6:3)
#loc3 = loc("jit(f)/mul"(#loc1))
#loc4 = loc("jit(f)/mul"(#loc2))
#loc5 = loc(callsite(#loc6 at #loc1))
#loc6 = loc("/x/site-packages/jax/_src/numpy/lax_numpy.py":100:4)
#loc7 = loc("while"(callsite(#loc8 at #loc1)))
#loc8 = loc("g"("/home/u/a.py":7:5))
"""


def test_call_sites_fused_locations_and_regions():
    shown = strip_locations(SYNTHETIC).splitlines()
    line = {op: next(n for n, s in enumerate(shown, 1) if op in s)
            for op in ("add", "multiply", "sine", "cosine", "while", "negate", "abs")}
    a = "/home/u/a.py"
    src = op_sources(SYNTHETIC)
    sets = op_source_sets(SYNTHETIC)
    # a library callee: the user's caller
    assert src[line["add"]] == Source(a, 5, 7)
    # fused: both lines, the first one as the source
    assert sets[line["multiply"]] == (Source(a, 5, 7), Source(a, 6, 3))
    assert src[line["multiply"]] == Source(a, 5, 7)
    # a call site inline: the callee, then the caller in its chain
    assert src[line["sine"]] == Source(a, 3, 1)
    assert op_frames(SYNTHETIC)[line["sine"]] == ((Source(a, 3, 1), Source("/home/u/b.py", 9, 2)),)
    # a library location alone: no source
    assert line["cosine"] not in src
    # a region op: its location follows its last region, the op is keyed by its first line
    assert src[line["while"]] == Source(a, 7, 5)
    assert sets[line["negate"]] == (Source(a, 6, 3), Source(a, 8, 1))
    # a brace inside a string does not close a region; generic op syntax
    assert src[line["abs"]] == Source(a, 6, 3)
    assert op_name(shown[line["abs"] - 1]) == "stablehlo.abs"
    assert set(src) == {line[k] for k in ("add", "multiply", "sine", "while", "negate", "abs")}
    found = ops_for_line([("s0", SYNTHETIC), ("s1", SYNTHETIC)], 6, "a.py")
    assert [o.op for o in found[0]] == ["stablehlo.multiply", "stablehlo.negate", "stablehlo.abs"]
    assert found[1].merged_with("a.py", 6) == (5, 8)
    assert found.summary() == "line 6: 3 ops in s0, 3 in s1 (merged with lines 5, 8)"


def test_text_without_locations_has_no_sources():
    assert op_sources(strip_locations(SYNTHETIC)) == {}
    assert op_sources("") == {}
    assert op_sources('module {\n} loc(garbage("x)\n') == {}


def test_payload_provenance_is_compact_and_valid():
    ex = rl.explore(jax_fn, jnp.ones(4), jnp.ones(4), run=False)
    payload = rl.exploration_payload(ex)
    assert problems(payload) == []
    p = payload["provenance"]
    assert p["files"][0] == HERE
    assert len(p["stages"]) == len(ex.all_stages)
    assert len(p["maps"]) <= len({s.ir for s in ex.all_stages})
    cos = _line_of(jax_fn, "@cos")
    for i, stage in enumerate(ex.all_stages):
        line_map = p["maps"][p["stages"][i]]
        shown = stage.as_text().splitlines()
        assert len(line_map) <= len(shown)
        hits = [n + 1 for n, k in enumerate(line_map)
                if k and p["sources"][k - 1][0][:2] == [0, cos]]
        xla = i >= len(ex.stages.stages)
        assert [op_name(shown[n - 1]) for n in hits] == ["cosine" if xla else "stablehlo.cosine"]
    code = p["code"]
    assert code["first"] == _line_of(jax_fn, "def jax_fn")
    assert code["lines"][0] == "def jax_fn(x, y):"
    assert any("@sum" in line for line in code["lines"])
    size = len(json.dumps(p))
    assert size < 0.05 * len(json.dumps(payload)), size


def test_notebook_payload_names_cells_not_paths():
    ex = rl.explore(jax_fn, jnp.ones(4), jnp.ones(4), run=False)
    payload = explorer_payload(ex, labels={HERE: "Cell In[3]"})
    assert payload["provenance"]["files"][0] == "Cell In[3]"
    other = relabel_files(rl.exploration_payload(ex), {})
    assert other["provenance"]["files"][0] == "test_provenance.py"
    assert problems(payload) == []


def test_module_text_exploration():
    ex = rl.explore(jax_fn, jnp.ones(4), jnp.ones(4), run=False)
    from reactant_lab.explore import ExploreOptions, build_from_text

    text_ex = build_from_text(ex.stages[0].ir, ExploreOptions(optimize="none"))
    assert text_ex.source_file == HERE
    assert len(text_ex.ops_for_line(_line_of(jax_fn, "@cos"))[0]) == 1
    entry = provenance_entry(list(text_ex.stages.stages), None)
    assert entry is not None and entry["code"]["lines"]
    assert provenance_entry(list(build_from_text(strip_locations(ex.stages[0].ir),
                                                 ExploreOptions(optimize="none")).stages.stages),
                            None) is None


@pytest.mark.parametrize("path,library", [
    ("/x/site-packages/numpy/core/fromnumeric.py", True),
    ("/x/dist-packages/jax/_src/lax/lax.py", True),
    (rl.__file__, True),
    (HERE, False),
    ("<ipython-input-3-abc>", False),
])
def test_library_files(path, library):
    assert is_library_file(path) is library


MAGIC_CELL = """%%reactant_jit
def g(x):
    y = jnp.sin(x)
    return y * 2.0

g(jnp.ones(3))"""


def test_a_reactant_jit_cell_numbers_lines_as_the_cell_does():
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    from reactant_lab.notebook import last_explorations
    from reactant_lab.render.payload import MIME_TYPE

    shell = start_ipython() or get_ipython()  # one global shell per process
    shell.run_cell("%load_ext reactant_lab", store_history=False)
    shell.run_cell("import jax.numpy as jnp", store_history=False)
    with capture_output() as cap:
        shell.run_cell(MAGIC_CELL, store_history=True)
    [ex] = last_explorations()
    sine = ex.ops_for_line(3)  # the %% line is line 1
    assert [o.op for o in sine[0]] == ["stablehlo.sine"]
    assert "stablehlo.multiply" in {o.op for o in ex.ops_for_line(4)[0]}
    # the call line holds every op of the call
    assert {"stablehlo.sine", "stablehlo.multiply"} <= {o.op for o in ex.ops_for_line(6)[0]}
    [payload] = [o.data[MIME_TYPE] for o in cap.outputs if MIME_TYPE in o.data]
    p = payload["provenance"]
    assert re.fullmatch(r"Cell In\[\d+\]", p["files"][p["code"]["file"]])
    assert p["code"]["first"] == 2 and p["code"]["lines"][-1] == "g(jnp.ones(3))"
