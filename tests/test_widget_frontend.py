"""The front end's MLIR lexer is tested (labextension/test/tokens.test.ts) against tokens the
Python lexer produced; this keeps that fixture in step with the Python lexer."""

from __future__ import annotations

import json
from pathlib import Path

from reactant_lab.analysis.lexer import tokenize

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "labextension" / "test" / "fixtures" / "mlir_tokens.json"
GOLDEN = ROOT / "tests" / "golden" / "highlight_input.mlir"


def test_front_end_token_fixture_matches_the_python_lexer():
    cases = json.loads(FIXTURE.read_text())
    lines = GOLDEN.read_text().splitlines()
    assert [c["line"] for c in cases] == lines
    stale = [c["line"] for c in cases if [tuple(t) for t in c["tokens"]] != list(tokenize(c["line"]))]
    assert not stale, (f"{FIXTURE.name} is out of date for {len(stale)} lines; regenerate it from "
                       "reactant_lab.analysis.lexer.tokenize over tests/golden/highlight_input.mlir")
