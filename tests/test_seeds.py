"""The suite's own seeding (tests/conftest.py): ``--seeds N`` runs each test that draws from the
seed under N seeds, each draw differs, a failure names the seed that replays it, and a test that
draws nothing runs once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_draws="""
        import os

        def test_draw(rng):
            with open(os.environ["DRAWS"], "a") as out:
                out.write(f"{rng.integers(2**62)}\\n")

        def test_fails_on_some_draws(rng):
            assert rng.integers(2) == 0

        def test_draws_nothing():
            with open(os.environ["DRAWS"] + ".seedless", "a") as out:
                out.write("ran\\n")
        """)
    return pytester


def test_each_test_runs_under_each_seed_and_a_failure_names_its_seed(suite, monkeypatch):
    draws = suite.path / "draws.txt"
    monkeypatch.setenv("DRAWS", str(draws))
    monkeypatch.setenv("REACTANT_LAB_SEED", "12345")
    result = suite.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider",
                                       "--seeds", "6")
    values = draws.read_text().split()
    assert len(values) == 6 and len(set(values)) == 6  # six runs, six different draws
    out = result.stdout.str()
    assert "under 6 seeds" in out
    assert (suite.path / "draws.txt.seedless").read_text().split() == ["ran"]  # once, not 6 times
    failed = re.findall(r"replay with REACTANT_LAB_SEED=(\d+) pytest", out)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 13
    assert 1 <= len(failed) == outcomes["failed"] < 6 and len(set(failed)) == len(failed)
    # A failing run's seed replays that failure alone.
    monkeypatch.delenv("DRAWS")
    monkeypatch.setenv("REACTANT_LAB_SEED", failed[0])
    again = suite.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider",
                                      "test_draws.py::test_fails_on_some_draws")
    again.assert_outcomes(failed=1)
