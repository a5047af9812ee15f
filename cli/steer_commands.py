"""``tablefmt options`` (show / set / unset, as Paimon's ALTER TABLE SET / RESET), ``tablefmt rollback`` and
``tablefmt tag`` (create with --time-retained, delete, list). Registered on the group in cli/main.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from tableformat.cli.common import (
    OneLineErrorCommand,
    OneLineErrorGroup,
    duration_flag,
    echo_json,
    handle_errors,
    open_table,
    progress,
    say,
    storage_option_flag,
)
from tableformat.cli.render import human_count, human_duration, iso_time, print_table, wrap
from tableformat.clock import system_clock
from tableformat.errors import UnknownOptionError, ValidationError
from tableformat.options import check_option_values
from tableformat.units import instant_ms, time_pair

_json_flag = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


class _ShowByDefault(OneLineErrorGroup):
    """``tablefmt options TABLE`` means ``tablefmt options show TABLE``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["show", *args]  # `options T --all` and `options --all T` alike
        return super().parse_args(ctx, args)


@click.group("options", cls=_ShowByDefault)
def options() -> None:
    """Show, set or unset TABLE's options; each change writes a new schema version as Paimon's ALTER TABLE SET /
    RESET does.

    \b
    tablefmt options TABLE [--all] [--json]   options set on TABLE (--all: defaults too)
    tablefmt options set TABLE KEY=VALUE ...  set options (values checked first)
    tablefmt options unset TABLE KEY ...      back to their defaults
    """


@options.command("show")
@click.argument("table")
@click.option("--all", "show_all", is_flag=True, help="Also list the options at tablefmt's defaults.")
@_json_flag
@storage_option_flag
@handle_errors
def options_show(table: str, show_all: bool, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Every option of TABLE with its effective value and where it comes from (table, or tablefmt's default)."""
    infos = open_table(table, storage_options).inspect.option_infos()
    if as_json:
        echo_json([{"key": o.key, "value": o.value, "source": o.source, "default": o.default} for o in infos])
        return
    shown = infos if show_all else [o for o in infos if o.source != "default"]
    print_table(["option", "value", "source"], [[o.key, o.value or "-", o.source] for o in shown], fold=["value"])
    if not show_all:
        click.echo(f"{len(infos) - len(shown)} other option(s) at tablefmt's defaults (--all lists them)")


def _pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="KEY=VALUE")
        key, value = pair.split("=", 1)
        if key in result:
            raise click.BadParameter(f"{key} is given twice", param_hint="KEY=VALUE")
        result[key.strip()] = value
    return result


def _report_change(result: Any, as_json: bool) -> None:
    if as_json:
        echo_json(
            {
                "changed": result.changed,
                "schema_id": result.schema.id,
                "previous_schema_id": result.previous.id,
                "options": dict(result.schema.options),
            }
        )
    elif result.changed:
        say(f"wrote schema-{result.schema.id} (was schema-{result.previous.id})")
    else:
        say(f"no change: the options already have these values (schema-{result.schema.id})")


@options.command("set")
@click.argument("table")
@click.argument("pairs", nargs=-1, required=True, metavar="KEY=VALUE ...")
@click.option("--allow-unknown-options", is_flag=True, help="Store names neither tablefmt nor Paimon knows.")
@_json_flag
@storage_option_flag
@handle_errors
def options_set(
    table: str, pairs: tuple[str, ...], allow_unknown_options: bool, as_json: bool, storage_options: tuple[str, ...]
) -> None:
    """Set options of TABLE (ALTER TABLE SET): values are checked first; nothing is written if one is bad."""
    wanted = _pairs(pairs)
    try:
        check_option_values(wanted)  # a bad or out-of-range value is a usage error, as with create --option
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from None
    target = open_table(table, storage_options)
    try:
        result = target.set_options(wanted, allow_unknown_options=allow_unknown_options)
    except UnknownOptionError as exc:
        raise click.UsageError(exc.describe("to store it anyway, pass --allow-unknown-options")) from None
    _report_change(result, as_json)


@options.command("unset")
@click.argument("table")
@click.argument("keys", nargs=-1, required=True, metavar="KEY ...")
@_json_flag
@storage_option_flag
@handle_errors
def options_unset(table: str, keys: tuple[str, ...], as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Unset options of TABLE (ALTER TABLE RESET): they return to their defaults."""
    target = open_table(table, storage_options)
    try:
        result = target.unset_options(keys)
    except UnknownOptionError as exc:
        raise click.UsageError(str(exc)) from None
    _report_change(result, as_json)


def _time_flag(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """--to-time: an ISO date-time (local zone unless it names one) or epoch milliseconds."""
    if value is None:
        return None
    try:
        return instant_ms(value, None)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither an ISO date-time (2026-11-24T10:00, 2026-11-24 10:00:00+01:00) nor epoch ms",
            param=param,
        ) from None


@click.command("rollback", cls=OneLineErrorCommand)
@click.argument("table")
@click.option("--to-snapshot", type=click.IntRange(min=1), default=None, help="Roll back to this snapshot id.")
@click.option("--to-tag", default=None, help="Roll back to this tag's snapshot.")
@click.option(
    "--to-time",
    callback=_time_flag,
    default=None,
    metavar="TIME",
    help="Roll back to the newest snapshot committed at or before TIME (ISO, local zone unless given; or epoch ms).",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be removed.")
@_json_flag
@storage_option_flag
@handle_errors
def rollback(
    table: str,
    to_snapshot: int | None,
    to_tag: str | None,
    to_time: int | None,
    dry_run: bool,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Roll TABLE back as Paimon does: snapshots newer than the target and their tags are removed (their files are
    left to remove-orphans). Refused while a branch or consumer needs them. Stop writers first."""
    if sum(x is not None for x in (to_snapshot, to_tag, to_time)) != 1:
        raise click.UsageError("give exactly one of --to-snapshot, --to-tag and --to-time")
    with progress("rolling back") as current:
        result = open_table(table, storage_options, current).rollback_to(
            to_snapshot, tag=to_tag, as_of=to_time, dry_run=dry_run
        )
    if as_json:
        echo_json(result.to_json())
        return
    verb = "would remove" if dry_run else "removed"
    gone = ", ".join(str(i) for i in sorted(result.removed_snapshots)) or "none"
    say(
        wrap(
            f"{'dry run: ' if dry_run else ''}rollback to {result.target_label}: {verb} snapshot(s) {gone}", indent="  "
        )
    )
    if result.removed_tags:
        say(f"{verb} tag(s): {', '.join(result.removed_tags)}")
    if result.restored_from_tag:
        say(f"snapshot {result.target} {'would be' if dry_run else 'was'} written back from its tag")
    for note in result.notes:
        say(wrap(note, first="note: ", indent="  "))


@click.group("tag", cls=OneLineErrorGroup)
def tag() -> None:
    """Create, delete and list tags (tags protect a snapshot's files from expiration)."""


@tag.command("create")
@click.argument("table")
@click.argument("name")
@click.option("--snapshot", "snapshot_id", type=int, default=None, help="Snapshot id (default: latest).")
@click.option(
    "--time-retained",
    callback=duration_flag,
    default=None,
    metavar="DURATION",
    help="Expire the tag this long after its creation (e.g. 7d, 12h); default: kept until deleted.",
)
@_json_flag
@storage_option_flag
@handle_errors
def tag_create(
    table: str,
    name: str,
    snapshot_id: int | None,
    time_retained: int | None,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Create tag NAME on a snapshot of TABLE."""
    retained = None if time_retained is None else dt.timedelta(milliseconds=time_retained)
    created = open_table(table, storage_options).create_tag(name, snapshot_id, time_retained=retained)
    if as_json:
        expires = created.expires_ms()
        seconds = created.time_retained_seconds
        echo_json(
            {
                "tag_name": created.name,
                "snapshot_id": created.snapshot.id,
                "time_retained_ms": None if seconds is None else round(seconds * 1000),
                **time_pair("expire_time", None if expires is None else int(expires)),
            }
        )
        return
    kept = "" if retained is None else f", retained {human_duration(time_retained)}"
    say(f"tag {created.name} -> snapshot {created.snapshot.id}{kept}")


@tag.command("delete")
@click.argument("table")
@click.argument("name")
@_json_flag
@storage_option_flag
@handle_errors
def tag_delete(table: str, name: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Delete tag NAME of TABLE."""
    open_table(table, storage_options).delete_tag(name)
    if as_json:
        echo_json({"tag_name": name, "deleted": True})
    else:
        say(f"deleted tag {name}")


@tag.command("list")
@click.argument("table")
@_json_flag
@storage_option_flag
@handle_errors
def tag_list(table: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """List the tags of TABLE: snapshot, commit time, records, retention and when it ends (an expired tag is
    deleted by the next snapshot expiration)."""
    items = open_table(table, storage_options).inspect.tags().to_pylist()
    now = system_clock()
    if as_json:
        echo_json([_tag_json(t, now) for t in items])
        return
    rows = [
        [
            t["tag_name"],
            t["snapshot_id"],
            iso_time(_ms(t["commit_time"])),
            human_count(t["record_count"]),
            "forever" if t["time_retained_seconds"] is None else human_duration(int(t["time_retained_seconds"] * 1000)),
            _expiry_text(_ms(t["expire_time"]), now),
        ]
        for t in items
    ]
    print_table(["tag", "snapshot", "committed", "records", "retained", "expires"], rows, right=["snapshot", "records"])


def _expiry_text(expires_ms: int | None, now_ms: int) -> str:
    """``never``, ``expired`` (the next snapshot expiration deletes it) or ``in 6 d`` (the largest whole unit; the
    exact time is in --json)."""
    if expires_ms is None:
        return "never"
    left = expires_ms - now_ms
    if left < 0:
        return "expired"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000)):
        if left >= size:
            return f"in {left // size} {unit}"
    return "in < 1 min"


def _ms(value: Any) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _tag_json(t: dict[str, Any], now_ms: int) -> dict[str, Any]:
    created = t["create_time"]
    expires = _ms(t["expire_time"])
    retained = t["time_retained_seconds"]
    return {
        "tag_name": t["tag_name"],
        "snapshot_id": t["snapshot_id"],
        "time_retained_ms": None if retained is None else round(retained * 1000),
        **time_pair("commit_time", _ms(t["commit_time"])),
        "record_count": t["record_count"],
        **time_pair("create_time", None if created is None else int(created.astimezone().timestamp() * 1000)),
        **time_pair("expire_time", expires),
        "expired": expires is not None and expires < now_ms,
    }
