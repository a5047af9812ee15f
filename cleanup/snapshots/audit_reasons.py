"""Why each file an expiration deletes goes, in one line, for the run's audit record (cleanup/kernel/audit.py):
which expired snapshot, tag, consumer or changelog it is, or which expired snapshots and tags alone used it, and
the rule with its cutoff that expired them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tableformat.durations import format_duration_ms
from tableformat.layout import TableLayout
from tableformat.units import iso_from_ms

from .config import ExpireConfig
from .planned import ExpirePlan


def _ids(ids: Iterable[int]) -> str:
    found = sorted(set(ids))
    if not found:
        return ""
    if len(found) > 2 and found[-1] - found[0] == len(found) - 1:
        return f"{found[0]}-{found[-1]}"
    return ", ".join(map(str, found))


def expiration_rule(config: ExpireConfig, now_ms: int) -> str:
    """The retention in force with its cutoff: ``snapshot.num-retained.min=1, snapshot.num-retained.max=10,
    snapshot.time-retained=1 h (cutoff 2026-11-27T14:30:00+00:00)``."""
    return (
        f"snapshot.num-retained.min={config.retain_min}, snapshot.num-retained.max={config.retain_max}, "
        f"snapshot.time-retained={format_duration_ms(config.time_retained_ms)} "
        f"(cutoff {iso_from_ms(now_ms - config.time_retained_ms)})"
    )


def expiration_reasons(
    layout: TableLayout, plans: Iterable[tuple[ExpirePlan, bool]], config: ExpireConfig
) -> Callable[[str], str]:
    """``path -> reason`` for the files of ``plans`` (a run's plan and its changelog plan, and, flagged True, the
    plans of the journals of interrupted runs it completes)."""
    named: dict[str, str] = {}
    used_by: list[str] = []
    for plan, completing in plans:
        rule = expiration_rule(config, plan.now_ms)
        if completing:
            rule = f"{rule}; completing interrupted expiration {plan.plan_id}"
        for snapshot_id in plan.expired_snapshots:
            named[layout.relative(layout.snapshot_file(snapshot_id))] = f"snapshot {snapshot_id} expired: {rule}"
        for tag in plan.expired_tags:
            named[layout.relative(layout.tag_file(tag.name))] = (
                f"tag {tag.name} of snapshot {tag.snapshot_id} deleted by hand"
                if tag.name in config.delete_tags
                else f"tag {tag.name} (snapshot {tag.snapshot_id}) expired: its time-retained passed"
            )
        cutoff = "" if plan.consumer_cutoff_ms is None else f" (cutoff {iso_from_ms(plan.consumer_cutoff_ms)})"
        for consumer in plan.expired_consumers:
            named[layout.relative(layout.consumer_file(consumer))] = (
                f"consumer {consumer} expired: not updated within consumer.expiration-time{cutoff}"
            )
        for changelog_id in plan.expired_changelogs:
            named[layout.relative(layout.changelog_file(str(changelog_id)))] = f"changelog {changelog_id} expired"
        roots = []
        if plan.expired_snapshots:
            roots.append(f"snapshot(s) {_ids(plan.expired_snapshots)}")
        if plan.expired_tags:
            roots.append(f"tag(s) {', '.join(sorted(t.name for t in plan.expired_tags))}")
        if plan.expired_changelogs:
            roots.append(f"changelog(s) {_ids(plan.expired_changelogs)}")
        if roots:
            rule = "tag deleted by hand" if config.delete_tags else rule
            used_by.append(f"used only by expired {' and '.join(roots)}: {rule}")
    fallback = "; ".join(used_by) or "left by an interrupted expiration"
    return lambda path: named.get(path, fallback)
