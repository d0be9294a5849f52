"""XLA's cost-analysis keys in words and in reading order, in the payload, the report and (from
the payload's names) the explorer."""

from __future__ import annotations

import json

import numpy as np

import reactant_lab as rl
from reactant_lab.render.cost_names import cost_name, cost_names, ordered_cost
from reactant_lab.render.report import report_html
from tests.test_payload_schema import problems


def test_keys_in_words():
    assert cost_name("flops") == "floating-point operations"
    assert cost_name("bytes accessed") == "bytes accessed (read and written)"
    assert cost_name("bytes accessed1{}") == "bytes read from operand 1"
    assert cost_name("bytes accessedout{}") == "bytes written to the output"
    assert cost_name("bytes accessedout{1}") == "bytes written to the output {1}"
    assert cost_name("utilization0{}") == "utilization of operand 0"
    assert cost_name("utilization12{0,1}") == "utilization of operand 12 {0,1}"
    assert cost_name("something new") == "something new"


def test_reading_order_totals_then_output_and_operands_then_the_rest():
    raw = {"utilization3{}": 2.0, "flops": 3242.0, "utilization1{}": 7.0, "zeta": 1.0,
           "bytes accessed2{}": 16.0, "utilization0{}": 16.0, "bytes accessed10{}": 1.0,
           "bytes accessed": 44025.0, "bytes accessedout{}": 11665.0, "bytes accessed0{}": 6.0,
           "transcendentals": 3.0}
    assert list(ordered_cost(raw)) == [
        "flops", "transcendentals", "bytes accessed", "bytes accessedout{}", "bytes accessed0{}",
        "bytes accessed2{}", "bytes accessed10{}", "utilization0{}", "utilization1{}",
        "utilization3{}", "zeta"]
    assert ordered_cost(raw) == raw
    names = cost_names(raw)
    assert [k for k, _ in names] == list(ordered_cost(raw))
    assert dict(names)["bytes accessed0{}"] == "bytes read from operand 0"


def test_a_compiled_payload_names_and_orders_its_cost(rng):
    ex = rl.explore(lambda a, b: np.sin(a) @ b + 1, rng.random((8, 8)), rng.random((8, 8)))
    payload = json.loads(json.dumps(rl.exploration_payload(ex)))
    assert problems(payload) == []
    x = payload["xla"]
    assert x["cost"] == {k: float(v) for k, v in ex.compiled.cost_analysis().items()
                         if isinstance(v, int | float)}
    keys = [k for k, _ in x["cost_names"]]
    assert keys[0] == "flops" and sorted(keys) == sorted(x["cost"])
    shown = [name for _, name in x["cost_names"]]
    assert not any("{}" in name for name in shown), shown
    html = report_html(payload, script=False)
    assert "floating-point operations" in html and 'title="bytes accessed0{}"' in html
    assert html.index("floating-point operations") < html.index("bytes read from operand 0")
