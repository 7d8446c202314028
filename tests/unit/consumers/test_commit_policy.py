from __future__ import annotations

from consumers.commit_policy import CommitPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_commits_after_enough_records_or_enough_time_and_never_with_nothing_done() -> None:
    clock = Clock()
    policy = CommitPolicy(max_records=3, max_interval_s=1.0, clock=clock)
    assert not policy.should_commit()  # nothing done
    clock.now += 5
    assert not policy.should_commit()  # time alone is not a reason
    policy.record_done()
    policy.record_done()
    assert not policy.should_commit()
    policy.record_done()
    assert policy.should_commit()  # count
    policy.committed()
    policy.record_done()
    assert not policy.should_commit()
    clock.now += 1.0
    assert policy.should_commit()  # time
