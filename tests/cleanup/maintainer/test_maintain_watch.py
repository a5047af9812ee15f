"""The watcher's min-heap with a fake clock: visit order and due times across tables with different cadences, a
table with backlog coming back first, an idle table not read before it is due, a stop that lets the running pass
finish; and the keep-up report of a table ingesting faster than its limit allows."""

from __future__ import annotations

import threading
from pathlib import Path

from support.warehouses import FakeClock, append, counting_opener, table_with_commits

from tableformat.cleanup.maintainer import DueQueue, Maintainer, MaintainSettings, TableTarget
from tableformat.table import Table

MINUTE = 60_000
HOUR = 60 * MINUTE


def test_the_queue_pops_the_earliest_due_table_and_a_push_replaces_its_earlier_entry() -> None:
    queue = DueQueue()
    a, b, c = (TableTarget(name=n, location=f"/w/{n}") for n in "abc")
    queue.push(a, 300)
    queue.push(b, 100)
    queue.push(c, 200)
    queue.push(b, 400)  # rescheduled: the entry at 100 no longer counts
    assert queue.next_due() == 200
    assert queue.pop_due(199) is None
    assert [queue.pop_due(1000) for _ in range(4)] == [c, a, b, None]


def _watch(maintainer: Maintainer, clock: FakeClock, until_ms: int) -> list[tuple[int, str, tuple[str, ...]]]:
    """Run the watcher until the fake clock passes ``until_ms``; (minute, table, operations run) per visit."""
    stop = threading.Event()
    visits: list[tuple[int, str, tuple[str, ...]]] = []
    start = clock.now

    def sink(report) -> None:  # type: ignore[no-untyped-def]
        visits.append(((clock.now - start) // MINUTE, report.table, tuple(n for n, _ in report.operations)))

    def sleep(seconds: float) -> None:
        clock.advance(max(1, int(seconds * 1000)))
        if clock.now - start > until_ms:
            stop.set()

    maintainer.watch(stop, sink, sleep)
    return visits


def test_visits_follow_each_tables_own_cadence_and_idle_tables_are_not_read_between(tmp_path: Path) -> None:
    table_with_commits(tmp_path / "wh" / "db.db" / "fast", 3, **{"maintenance.check-interval": "10 min"})
    table_with_commits(tmp_path / "wh" / "db.db" / "slow", 3, **{"maintenance.check-interval": "25 min"})
    clock = FakeClock()
    log: list[tuple[str, str]] = []
    settings = MaintainSettings(parallelism=1, poll_interval_ms=24 * HOUR, discovery_interval_ms=24 * HOUR)
    maintainer = Maintainer([str(tmp_path / "wh")], settings, clock=clock, opener=counting_opener(log))
    visits = _watch(maintainer, clock, 60 * MINUTE)
    assert visits == [
        (0, "db.fast", ("expire", "remove-orphans")),
        (0, "db.slow", ("expire", "remove-orphans")),
        (10, "db.fast", ("expire",)),
        (20, "db.fast", ("expire",)),
        (25, "db.slow", ("expire",)),
        (30, "db.fast", ("expire",)),
        (40, "db.fast", ("expire",)),
        (50, "db.slow", ("expire",)),  # due at the same time: the one scheduled first goes first
        (50, "db.fast", ("expire",)),
        (60, "db.fast", ("expire",)),
    ]
    # every visit probes (and, as it runs something, probes again under the lease); nothing is read between visits
    probes = [p.rsplit("/", 1)[-1] for kind, p in log if p.endswith(("maintain-state", "LATEST")) and kind == "read"]
    assert probes.count("maintain-state") == 2 * len(visits)


def test_a_table_with_backlog_comes_back_before_an_idle_one_and_changes_are_polled(tmp_path: Path) -> None:
    table_with_commits(tmp_path / "wh" / "db.db" / "busy", 12, **{"snapshot.expire.limit": "3"})
    table_with_commits(tmp_path / "wh" / "db.db" / "idle", 3)
    clock = FakeClock()
    settings = MaintainSettings(
        parallelism=1, backlog_retry_ms=MINUTE, poll_interval_ms=15 * MINUTE, discovery_interval_ms=24 * HOUR
    )
    maintainer = Maintainer([str(tmp_path / "wh")], settings, clock=clock)
    visits = _watch(maintainer, clock, 20 * MINUTE)
    assert visits == [
        (0, "db.busy", ("expire", "remove-orphans")),  # 3 of 10 expirable: backlog 7
        (0, "db.idle", ("expire", "remove-orphans")),
        (1, "db.busy", ("expire",)),  # 3 more
        (2, "db.busy", ("expire",)),  # 3 more: backlog 1
        (3, "db.busy", ("expire",)),  # the last one
        (15, "db.idle", ()),  # polled for changes: nothing new, nothing read beyond the probe
        (18, "db.busy", ()),
    ]
    assert [s.id for s in Table.open(str(tmp_path / "wh" / "db.db" / "busy")).snapshots()] == [11, 12]


def test_a_stop_ends_the_watch_after_the_running_pass(tmp_path: Path) -> None:
    table_with_commits(tmp_path / "t", 4)
    stop = threading.Event()
    reports = []

    def sink(report) -> None:  # type: ignore[no-untyped-def]
        reports.append(report)
        stop.set()  # as SIGTERM would, while the table's pass is reported

    Maintainer([str(tmp_path / "t")], MaintainSettings(), clock=FakeClock()).watch(stop, sink, lambda s: None)
    assert [r.ok for r in reports] == [True]


def test_keep_up_warns_when_ingest_outpaces_what_the_limit_lets_expiration_do(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = table_with_commits(root, 10, **{"snapshot.expire.limit": "2", "snapshot.num-retained.min": "1"})
    clock = FakeClock()
    settings = MaintainSettings(backlog_retry_ms=HOUR)
    maintainer = Maintainer([str(root)], settings, clock=clock)
    passes = []
    for _ in range(3):
        report = maintainer.run_once()[0]
        assert report.keep_up is not None
        passes.append(report.keep_up)
        append(table, 5, start=100 + len(passes) * 10)  # 5 new snapshots per pass, 2 expired per pass
        clock.advance(HOUR)
    assert [k.backlog_trend for k in passes] == [(7,), (7, 10), (7, 10, 13)]
    raise_limit = (
        "expire left {} due with snapshot.expire.limit=2: raise snapshot.expire.limit (or run maintenance more often)"
    )
    # 10 commits in the first hour against 2 expirations per run at one run per backlog-retry (1 h): outpaced
    assert passes[0].falling_behind and passes[0].advice == (raise_limit.format(7),)
    assert passes[2].advice == ("backlog grew over the last 3 passes (7 -> 10 -> 13)", raise_limit.format(13))
    assert passes[2].backlog == {"expire": 13}
    first = passes[0]  # rates over the hours covered so far (the commits' hour up to now)
    assert (
        round(first.commits_per_hour * first.window_hours)
        == round(first.ingest_rows_per_hour * first.window_hours)
        == 10
    )
