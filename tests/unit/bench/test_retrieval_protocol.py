"""The keep rule of the retrieval selection protocol (``bench/retrieval_protocol.py``).

Every ranking change is judged by this rule over all public question sets at once;
a wrong verdict would keep a change that overfits one set, so each branch of the
rule is shown on small hand-made reports.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PROTOCOL = Path(__file__).resolve().parents[3] / "bench" / "retrieval_protocol.py"


@pytest.fixture(scope="module")
def protocol() -> ModuleType:
    spec = importlib.util.spec_from_file_location("retrieval_protocol", PROTOCOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def report(protocol: ModuleType, sets: dict[str, tuple[int, float]]) -> Any:
    """A run whose set NAME has HITS at 5 of 20 answerable rows and MRR."""
    def one(name: str, hits: int, mrr: float) -> Any:
        ranking = protocol.Ranking({1: 0, 3: 0, 5: hits, 10: hits}, mrr,
                                   {f"{name}-{i:02d}": None for i in range(20)})
        return protocol.SetResult(name, "lib", 1, 1, 20, 0, ranking, ranking, 0, 0, 0, 0,
                                  0.0, 0.0)
    return protocol.RunReport("2026-12-07", "bench", {}, "abc",
                              {n: one(n, h, m) for n, (h, m) in sets.items()})


BEFORE = {"a": (10, 0.50), "b": (15, 0.60)}


@pytest.mark.parametrize(("after", "keep", "says"), [
    ({"a": (11, 0.50), "b": (15, 0.60)}, True, "mean recall@5 rises"),
    ({"a": (12, 0.50), "b": (14, 0.60)}, True, "least change: b -1"),   # one question lost
    ({"a": (14, 0.70), "b": (13, 0.70)}, False, "b 15 -> 13 (-2)"),     # two lost in one set
    ({"a": (11, 0.50), "b": (14, 0.60)}, False, "does not rise"),      # mean unchanged
    ({"a": (10, 0.55), "b": (15, 0.60)}, True, "top is better ordered"),  # tie-break
    ({"a": (10, 0.70), "b": (15, 0.59)}, False, "MRR falls: b"),       # tie, one MRR falls
    ({"a": (10, 0.50), "b": (15, 0.60)}, False, "mean MRR does not rise"),  # no change
])
def test_the_keep_rule(protocol: ModuleType, after: dict[str, tuple[int, float]],
                       keep: bool, says: str) -> None:
    decision = protocol.keep_rule(report(protocol, BEFORE), report(protocol, after))
    assert decision.keep is keep, decision
    assert says in decision.reason, decision


def test_runs_over_different_sets_are_not_compared(protocol: ModuleType) -> None:
    decision = protocol.keep_rule(report(protocol, BEFORE),
                                  report(protocol, {"a": (20, 1.0)}))
    assert not decision.keep and "b" in decision.reason
