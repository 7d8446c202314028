"""eval's figures on a searcher whose answers are scripted: known recall, MRR, a known leak.

Each scripted answer places the evidence at a chosen rank, so the expected
figures are computed by hand here, not by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.mcp_searcher import AS_OF, passage

from retrieval.eval import EvalInputError, QaRow, evaluate, load_rows, parse_rows
from retrieval.models import Passage, SearchRequest, SearchResponse

SHARED_QA = Path(__file__).resolve().parents[4] / "shared" / "eval" / "basecamp-qa.jsonl"
FILLER = [passage(f"filler-{i}", f"unrelated text number {i}", clause=str(i)) for i in range(10)]


def row(id: str, kind: str = "paraphrase", document_id: str | None = "doc",
        evidence: str | None = "the  answer\nis here", profile: str = "public") -> QaRow:
    if kind == "no-document":
        document_id = evidence = None
    return QaRow(id=id, question=f"question {id}?", document_id=document_id, evidence=evidence,
                 heading=None, kind=kind, profile=profile)


def hit(document_id: str = "doc") -> Passage:
    # Whitespace differs from the row's evidence: compared after collapsing runs.
    return passage(document_id, "Intro: the answer is\n  here, in full.")


def ok(passages: list[Passage]) -> SearchResponse:
    return SearchResponse(status="ok", message="", passages=passages, as_of=AS_OF,
                          threshold=0.5, best_score=1.0)


def refused(status: str = "no_document") -> SearchResponse:
    return SearchResponse(status=status, message="", as_of=AS_OF,
                          threshold=0.5)


def at_rank(rank: int) -> SearchResponse:
    ranked = [*FILLER[: rank - 1], hit(), *FILLER[rank - 1 :]]
    return ok(ranked[:10])


class Scripted:
    """Answers each question with the response scripted for it; records the labels."""

    def __init__(self, answers: dict[str, SearchResponse]) -> None:
        self.answers = answers
        self.seen: list[tuple[str, int, frozenset[str]]] = []

    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        self.seen.append((request.question, request.k, caller_labels))
        return self.answers[request.question]


def q(row_id: str) -> str:
    return f"question {row_id}?"


PROFILES = {"public": frozenset({"public"}), "finance": frozenset({"public", "finance"})}


def test_recall_mrr_refusals_and_leaks_match_the_hand_computed_figures() -> None:
    neighbour = hit().model_copy(update={"via": "neighbour_of", "neighbour_of": "x"})
    labelled = passage("finance-doc", "reserve", labels=["finance"])
    rows = [
        row("r1", kind="numeric"),                 # hit at 1
        row("r3"),                                 # hit at 3
        row("r7"),                                 # hit at 7: only in @10
        row("neighbour"),                          # evidence only in a neighbour: miss
        row("wrong-doc"),                          # evidence in another document: miss
        row("refused-needlessly"),                 # refused; threshold off finds it at 2
        row("refused-rightly"),                    # refused; threshold off finds it at 8 (> 5)
        row("fin", profile="finance"),             # hit at 2 under the finance profile
        row("none-1", kind="no-document"),          # correctly refused
        row("none-2", kind="no-document"),          # answered, and leaks a finance passage
    ]
    searcher = Scripted({
        q("r1"): at_rank(1), q("r3"): at_rank(3), q("r7"): at_rank(7),
        q("neighbour"): ok([*FILLER[:3], neighbour]),
        q("wrong-doc"): ok([hit("other-doc"), *FILLER[:2]]),
        q("refused-needlessly"): refused(), q("refused-rightly"): refused("no_access"),
        q("fin"): at_rank(2),
        q("none-1"): refused(), q("none-2"): ok([FILLER[0], labelled]),
    })
    unthresholded = Scripted({q("refused-needlessly"): at_rank(2),
                              q("refused-rightly"): at_rank(8)})

    report = evaluate(searcher, rows, PROFILES, unthresholded=unthresholded)

    overall = report.overall
    assert overall.answerable == 8
    assert overall.hits == {1: 1, 3: 3, 5: 3, 10: 4}
    assert overall.recall[5] == pytest.approx(3 / 8)
    assert overall.mrr == pytest.approx((1 + 1 / 3 + 1 / 7 + 1 / 2) / 8)
    assert report.by_kind["numeric"].hits[1] == 1
    assert report.by_kind["paraphrase"].answerable == 7
    assert report.by_profile["finance"].hits == {1: 0, 3: 1, 5: 1, 10: 1}
    assert report.by_profile["public"].answerable == 7
    assert (report.unanswerable, report.unanswerable_refused) == (2, 1)
    assert report.no_document_rate == pytest.approx(0.5)
    assert report.answerable_refused == 2
    assert report.unnecessary_refusals == 1
    [leak] = report.leaks
    assert (leak.row_id, leak.chunk_id, leak.access_labels) == (
        "none-2", labelled.chunk_id, ["finance"])
    # Every row asked once at depth 10 with its own profile's labels; the re-run only
    # for the two refused answerable rows.
    assert len(searcher.seen) == len(rows)
    assert {k for _, k, _ in searcher.seen} == {10}
    assert ("question fin?", 10, PROFILES["finance"]) in searcher.seen
    assert [question for question, _, _ in unthresholded.seen] == [
        q("refused-needlessly"), q("refused-rightly")]
    assert report.latency_p95_ms >= report.latency_p50_ms >= 0


def test_without_an_unthresholded_searcher_unnecessary_refusals_are_not_measured() -> None:
    rows = [row("a"), row("b")]
    report = evaluate(Scripted({q("a"): refused(), q("b"): at_rank(1)}), rows, PROFILES)
    assert report.answerable_refused == 1
    assert report.unnecessary_refusals is None
    assert "not measured" in report.render()


def test_text_rendering_and_json_carry_the_figures() -> None:
    rows = [row("a"), row("b", kind="keyword"), row("n", kind="no-document")]
    report = evaluate(Scripted({q("a"): at_rank(1), q("b"): at_rank(4), q("n"): refused()}),
                      rows, PROFILES, unthresholded=Scripted({}))
    text = report.render()
    assert "all answerable" in text and "kind keyword" in text and "profile public" in text
    assert "1/1 unanswerable rows refused (100%)" in text
    assert "permission leaks: 0" in text
    data = json.loads(report.to_json())
    assert data["overall"]["hits"] == {"1": 1, "3": 1, "5": 2, "10": 2}
    assert data["unnecessary_refusals"] == 0
    assert data["leaks"] == []
    assert [r["rank"] for r in data["rows"]] == [1, 4, None]


def test_an_unknown_profile_or_bad_k_is_refused_before_any_search() -> None:
    searcher = Scripted({})
    with pytest.raises(EvalInputError, match=r"\['support'\].*known: \['finance', 'public'\]"):
        evaluate(searcher, [row("a", profile="support")], PROFILES)
    with pytest.raises(EvalInputError, match="ks=\\[1, 11\\]"):
        evaluate(searcher, [row("a")], PROFILES, ks=(1, 11))
    assert searcher.seen == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("{oops", r"qa\.jsonl:2: not valid JSON", id="not-json"),
        pytest.param("[1]", r"qa\.jsonl:2: expected a JSON object, got list", id="not-object"),
        pytest.param(json.dumps({"id": "x", "question": "q", "document_id": "d",
                                 "evidence": None, "heading": None, "kind": "numeric",
                                 "profile": "public"}),
                     r"qa\.jsonl:2: .*evidence must be set", id="answerable-without-evidence"),
        pytest.param(json.dumps({"id": "x", "question": "", "document_id": None,
                                 "evidence": None, "heading": None, "kind": "no-document",
                                 "profile": "public"}),
                     r"qa\.jsonl:2: field question: .*(value \"\")", id="empty-question"),
        pytest.param(json.dumps({"id": "x", "question": "q", "document_id": None,
                                 "evidence": None, "heading": None, "kind": "no-document"}),
                     r"qa\.jsonl:2: field profile: Field required", id="no-profile"),
        pytest.param(json.dumps({"id": "a", "question": "q", "document_id": None,
                                 "evidence": None, "heading": None, "kind": "no-document",
                                 "profile": "public"}),
                     r"qa\.jsonl:2: id='a' already used on line 1", id="duplicate-id"),
    ],
)
def test_the_loader_names_line_and_field(tmp_path: Path, line: str, expected: str) -> None:
    first = json.dumps({"id": "a", "question": "q", "document_id": None, "evidence": None,
                        "heading": None, "kind": "no-document", "profile": "public"})
    path = tmp_path / "qa.jsonl"
    path.write_text(first + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(EvalInputError, match=expected):
        load_rows(path)


def test_the_shared_basecamp_set_loads() -> None:
    if not SHARED_QA.exists():
        pytest.skip(f"{SHARED_QA} is not on this machine")
    rows = load_rows(SHARED_QA)
    assert len(rows) == 50
    assert sum(r.answerable for r in rows) == 40
    assert {r.profile for r in rows} == {"public"}


def test_parse_rows_refuses_an_empty_set() -> None:
    with pytest.raises(EvalInputError, match="no rows"):
        parse_rows(["", "  "], source="empty.jsonl")


def test_profiles_come_from_row_names_or_from_the_configured_keys() -> None:
    from retrieval.credentials import Credentials
    from retrieval.eval import profiles_from_credentials, profiles_named_after_labels

    rows = [row("a"), row("b", profile="finance")]
    assert profiles_named_after_labels(rows) == {
        "public": frozenset({"public"}), "finance": frozenset({"finance"})}
    credentials = Credentials.from_mapping({
        "support-bot": {"key": "agent-key-0123456789abcdef", "labels": ["public"]},
        "finance-desk": {"key": "finance-key-0123456789abcdef",
                         "labels": ["public", "finance"]},
    })
    assert profiles_from_credentials(credentials) == {
        "support-bot": frozenset({"public"}), "finance-desk": frozenset({"public", "finance"})}
