"""The selection protocol's numbers: one run over every question set, and the keep rule.

A ranking choice (fusion constant, weights, windows, models, second stage,
thresholds) that is tuned on one question set fits that set's wording and
library, not policy search. So a change is judged on every public set at once,
against a saved run of the code before it (``bench/results/retrieval-baseline.json``):

    **keep** a change only if the mean recall@5 over the sets (each set's share
    of its answerable rows, averaged, so a small set weighs as much as a large
    one) rises, and no set loses more than one question at 5. **Tie-break**: a
    change that leaves every set's recall@5 exactly as it was is kept when it
    only reorders the top for the better: no set's MRR falls and the mean MRR
    rises (the right rule moving from 5th to 3rd is what an agent that asks for
    3 passages needs, and recall@5 cannot see it).

Both runs must cover the same sets with the same questions; otherwise there is
nothing to compare and the change is rejected with that reason.

``RunReport`` is what ``bench_retrieval.py --json`` writes and ``--compare``
reads; this module has no I/O beyond that JSON and imports nothing of the
project, so the rule can be read (and tested) on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

KS = (1, 3, 5, 10)
SCHEMA = 1


@dataclass(frozen=True)
class Ranking:
    """How one ranker did on the answerable rows of one set."""

    hits: dict[int, int]  # k -> rows with a hit among the first k ranked passages
    mrr: float
    ranks: dict[str, int | None]  # row id -> rank of the first hit (None: not in the top 10)

    def to_dict(self) -> dict[str, Any]:
        return {"hits": {str(k): v for k, v in self.hits.items()}, "mrr": self.mrr,
                "ranks": self.ranks}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ranking:
        return cls({int(k): int(v) for k, v in data["hits"].items()}, float(data["mrr"]),
                   {str(k): (None if v is None else int(v)) for k, v in data["ranks"].items()})


@dataclass(frozen=True)
class SetResult:
    """One question set: ours as a caller sees it (threshold on), and the baseline."""

    name: str
    library: str
    documents: int
    chunks: int
    answerable: int
    unanswerable: int
    ours: Ranking
    baseline: Ranking
    unanswerable_refused: int
    answerable_refused: int
    unnecessary_refusals: int | None
    leaks: int
    latency_p50_ms: float
    latency_p95_ms: float

    def recall(self, k: int, *, baseline: bool = False) -> float:
        ranking = self.baseline if baseline else self.ours
        return ranking.hits[k] / self.answerable if self.answerable else 0.0

    @property
    def ratio_at_5(self) -> float | None:
        """ours / baseline at recall@5 (None when the baseline found nothing)."""
        base = self.baseline.hits[5]
        return self.ours.hits[5] / base if base else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ours"], data["baseline"] = self.ours.to_dict(), self.baseline.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SetResult:
        values = dict(data)
        values["ours"] = Ranking.from_dict(data["ours"])
        values["baseline"] = Ranking.from_dict(data["baseline"])
        return cls(**values)


@dataclass
class RunReport:
    """Every set of one run, with what it ran (settings, commit, date) and its cost."""

    date: str
    command: str
    settings: dict[str, Any]
    commit: str
    sets: dict[str, SetResult] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # set name -> why
    timing: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_recall_at_5(self) -> float | None:
        return mean([s.recall(5) for s in self.sets.values()])

    @property
    def baseline_mean_recall_at_5(self) -> float | None:
        return mean([s.recall(5, baseline=True) for s in self.sets.values()])

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "date": self.date, "command": self.command,
                "settings": self.settings, "commit": self.commit,
                "mean_recall_at_5": self.mean_recall_at_5,
                "baseline_mean_recall_at_5": self.baseline_mean_recall_at_5,
                "sets": {n: s.to_dict() for n, s in self.sets.items()},
                "skipped": self.skipped, "timing": self.timing}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunReport:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}: this bench reads schema {SCHEMA}")
        return cls(str(data["date"]), str(data["command"]), dict(data["settings"]),
                   str(data["commit"]),
                   {n: SetResult.from_dict(s) for n, s in data["sets"].items()},
                   dict(data["skipped"]), dict(data["timing"]))


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Decision:
    keep: bool
    reason: str

    def __str__(self) -> str:
        return f"{'KEEP' if self.keep else 'REJECT'}: {self.reason}"


def keep_rule(before: RunReport, after: RunReport) -> Decision:
    """The rule of the module docstring, with the reason in words."""
    only = sorted(set(before.sets) ^ set(after.sets))
    if only:
        return Decision(False, f"set(s) {', '.join(only)} measured in one run only; the rule "
                               "needs the same sets in both (see the skipped reasons)")
    if not after.sets:
        return Decision(False, "no set was measured")
    changed = [n for n in after.sets if set(before.sets[n].ours.ranks)
               != set(after.sets[n].ours.ranks)]
    if changed:
        return Decision(False, f"the questions of {', '.join(sorted(changed))} differ between "
                               "the runs; measure the code before on the same files")
    drops = [(n, before.sets[n].ours.hits[5], after.sets[n].ours.hits[5]) for n in after.sets
             if after.sets[n].ours.hits[5] < before.sets[n].ours.hits[5] - 1]
    old, new = before.mean_recall_at_5 or 0.0, after.mean_recall_at_5 or 0.0
    if drops:
        worst = ", ".join(f"{n} {b} -> {a} ({a - b:+d})" for n, b, a in drops)
        return Decision(False, f"recall@5 drops by more than one question: {worst}")
    if all(after.sets[n].ours.hits[5] == before.sets[n].ours.hits[5] for n in after.sets):
        return _reorder_only(before, after)
    if new <= old:
        return Decision(False, f"mean recall@5 does not rise ({old:.3f} -> {new:.3f})")
    worst_name = min(after.sets, key=lambda n: after.sets[n].ours.hits[5]
                     - before.sets[n].ours.hits[5])
    delta = after.sets[worst_name].ours.hits[5] - before.sets[worst_name].ours.hits[5]
    return Decision(True, f"mean recall@5 rises {old:.3f} -> {new:.3f}; no set drops by more "
                          f"than one question (least change: {worst_name} {delta:+d})")


def _reorder_only(before: RunReport, after: RunReport) -> Decision:
    """The tie-break: recall@5 the same in every set; the top is better ordered or not."""
    falls = [(n, before.sets[n].ours.mrr, after.sets[n].ours.mrr) for n in after.sets
             if after.sets[n].ours.mrr < before.sets[n].ours.mrr - 1e-9]
    if falls:
        worst = ", ".join(f"{n} {b:.3f} -> {a:.3f}" for n, b, a in falls)
        return Decision(False, f"recall@5 unchanged in every set and MRR falls: {worst}")
    old = mean([before.sets[n].ours.mrr for n in after.sets]) or 0.0
    new = mean([after.sets[n].ours.mrr for n in after.sets]) or 0.0
    if new <= old + 1e-9:
        return Decision(False, f"recall@5 unchanged in every set and mean MRR does not rise "
                               f"({old:.3f} -> {new:.3f})")
    return Decision(True, f"recall@5 unchanged in every set; mean MRR rises {old:.3f} -> "
                          f"{new:.3f} and no set's MRR falls (the top is better ordered)")


def _hits(ranking: Ranking) -> str:
    return "/".join(str(ranking.hits[k]) for k in KS)


def render(report: RunReport) -> str:
    """The one table: ours per set (threshold on, as a caller sees it), the baseline beside."""
    head = (f"{'set':13}{'docs':>5}{'chunks':>7}{'ans':>5}{'r@1':>5}{'r@3':>5}{'r@5':>10}"
            f"{'r@10':>5}{'MRR':>7}{'no-doc refused':>16}{'unneeded':>9}   "
            f"{'baseline r@1/3/5/10':>20}{'MRR':>7}{'r@5 ours/base':>15}")
    lines = [head]
    for s in report.sets.values():
        ratio = "-" if s.ratio_at_5 is None else f"{s.ratio_at_5:.2f}x"
        unneeded = "-" if s.unnecessary_refusals is None else str(s.unnecessary_refusals)
        r5 = f"{s.ours.hits[5]} ({s.recall(5):.0%})"
        lines.append(
            f"{s.name:13}{s.documents:>5}{s.chunks:>7}{s.answerable:>5}{s.ours.hits[1]:>5}"
            f"{s.ours.hits[3]:>5}{r5:>10}{s.ours.hits[10]:>5}{s.ours.mrr:>7.3f}"
            f"{f'{s.unanswerable_refused}/{s.unanswerable}':>16}{unneeded:>9}   "
            f"{_hits(s.baseline):>20}{s.baseline.mrr:>7.3f}{ratio:>15}")
    ours, base = report.mean_recall_at_5, report.baseline_mean_recall_at_5
    if ours is not None and base is not None:
        lines.append(f"mean recall@5 over {len(report.sets)} sets: {ours:.3f} "
                     f"(baseline {base:.3f}, {ours / base:.2f}x)")
    lines.append("r@k: answerable rows with a hit in the first k passages as a caller gets them "
                 "(a refused row is a miss); unneeded: refused rows with a hit in the top 5 "
                 "with the threshold off (r@5 + unneeded = the ranking's own r@5)")
    lines += [f"skipped {name}: {why}" for name, why in report.skipped.items()]
    leaks = sum(s.leaks for s in report.sets.values())
    lines.append(f"permission leaks: {leaks}")
    return "\n".join(lines)


def render_comparison(before: RunReport, after: RunReport) -> str:
    """Before/after per set at 5 (and MRR), the questions that moved, then the decision."""
    lines = [f"before: {_describe(before)}", f"after:  {_describe(after)}",
             f"{'set':13}{'ans':>5}{'r@5 before':>12}{'after':>7}{'change':>8}"
             f"{'MRR before':>12}{'after':>7}{'no-doc refused':>16}   questions moved (rank at 5)"]
    for name in [*after.sets, *(n for n in before.sets if n not in after.sets)]:
        b, a = before.sets.get(name), after.sets.get(name)
        if b is None or a is None:
            lines.append(f"{name:13} measured only {'after' if b is None else 'before'}")
            continue
        gained = [q for q, r in a.ours.ranks.items()
                  if r is not None and r <= 5 and not _within(b.ours.ranks.get(q), 5)]
        lost = [q for q, r in b.ours.ranks.items()
                if r is not None and r <= 5 and not _within(a.ours.ranks.get(q), 5)]
        moved = " ".join([f"+{q}" for q in gained] + [f"-{q}" for q in lost])
        refused = f"{b.unanswerable_refused} -> {a.unanswerable_refused}/{a.unanswerable}"
        lines.append(
            f"{name:13}{a.answerable:>5}{b.ours.hits[5]:>12}{a.ours.hits[5]:>7}"
            f"{a.ours.hits[5] - b.ours.hits[5]:>+8d}{b.ours.mrr:>12.3f}{a.ours.mrr:>7.3f}"
            f"{refused:>16}   {moved}")
    old, new = before.mean_recall_at_5, after.mean_recall_at_5
    if old is not None and new is not None:
        lines.append(f"mean recall@5: {old:.3f} -> {new:.3f} ({new - old:+.3f})")
    lines.append(str(keep_rule(before, after)))
    return "\n".join(lines)


def _describe(report: RunReport) -> str:
    settings = " ".join(f"{k}={v}" for k, v in report.settings.items() if v is not None)
    return f"{report.date} {report.commit} {settings}"


def _within(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k
