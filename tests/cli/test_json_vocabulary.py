"""Every command's ``--json`` against docs/json.md: each document has exactly the keys its table there lists, with
the documented types; no key anywhere uses a spelling the vocabulary replaced; every path is relative to the table
root; every time is an ISO string with an offset next to its ``*_ms``.

The commands run on a real table (support/events.py: dated loads, an overwrite, a dropped day, a tag, orphans)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.events import build_events, rows

from tableformat.cli.main import cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "json.md"
BANNED = {"id", "row_count", "file_size", "bytes_reclaimable", "time_millis", "files", "rows", "bytes"}
"""Keys the vocabulary replaced (``snapshot_id``/``field_id``, ``record_count``, ``file_size_in_bytes``,
``reclaimable_bytes``, ``<name>`` + ``<name>_ms``, ``*_files``/``*_records``/``*_bytes``)."""
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$")


def documented() -> dict[str, dict[str, str]]:
    """docs/json.md's tables: ``### `name` `` then ``| key | type | meaning |`` rows -> {name: {key: type}}."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOC.read_text().splitlines():
        heading = re.match(r"^### `([^`]+)`", line)
        if heading:
            current = sections.setdefault(heading.group(1), {})
            continue
        escaped = line.replace("\\|", "\0")  # `int\|null`: a | inside a cell
        cells = [c.strip().replace("\0", "|") for c in escaped.strip().strip("|").split("|")] if line[:1] == "|" else []
        if current is not None and len(cells) >= 3 and cells[0].startswith("`"):
            current[cells[0].strip("`")] = cells[1].strip("`")
    return sections


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    lines = result.stdout.strip().splitlines()
    if args[0] in {"maintain", "report"}:
        return [json.loads(line) for line in lines]
    return json.loads(result.stdout)


def every_command(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """(section, document) of every command with ``--json``, in an order that leaves each something to do."""
    table = build_events(tmp_path / "events")
    at = table.location
    data = tmp_path / "in.parquet"
    pq.write_table(rows(dt.date.today(), 5, 50_000), data)
    yield (
        "create",
        _cli("create", str(tmp_path / "new"), "--schema-from", str(data), "--partition-keys", "day", "--json"),
    )
    yield "options unset", _cli("options", "unset", at, "write-only", "--json")  # commits expire afterwards
    yield "write", _cli("write", at, str(data), "--json")
    yield "write", _cli("write", at, str(data), "--json")
    yield "options set", _cli(
        "options", "set", at, "record-level.time-field=id", "record-level.expire-time=1 d", "compaction.min.file-num=2",
        "--json",
    )  # fmt: skip
    yield "options", _cli("options", "show", at, "--all", "--json")
    yield "snapshots", _cli("snapshots", at, "--json")
    yield "files", _cli("files", at, "--json")
    yield "partitions", _cli("partitions", at, "--json")
    yield "describe", _cli("describe", at, "--json")
    yield "tag create", _cli("tag", "create", at, "kept", "--time-retained", "1 d", "--json")
    yield "tag list", _cli("tag", "list", at, "--json")
    yield "check", _cli("check", at, "--json")
    yield "drop-partition", _cli("drop-partition", at, "day=1999-01-01", "--json")
    yield "report", _cli("report", at, "--json")
    yield "maintain", _cli("maintain", at, "--dry-run", "--json")
    for operation in ("expire-partitions", "expire-records", "compact", "expire", "remove-orphans"):
        yield operation, _cli(operation, at, "--dry-run", "--json")
    yield "compact", _cli("compact", at, "--json")
    yield "expire-records", _cli("expire-records", at, "--json")
    yield "expire-partitions", _cli("expire-partitions", at, "--json")
    yield "remove-orphans", _cli("remove-orphans", at, "--older-than", "1 h", "--json")
    yield "expire", _cli("expire", at, "--json")
    yield "erase", _cli("erase", at, "--where", "id < 3", "--purge", "--dry-run", "--json")
    yield "erase", _cli("erase", at, "--where", "id < 3", "--json")
    yield "erase --verify", _cli("erase", at, "--verify", "--where", "id = -1", "--json")  # certified: exit 0
    yield "rollback", _cli("rollback", at, "--to-tag", "kept", "--dry-run", "--json")
    yield "tag delete", _cli("tag", "delete", at, "kept", "--json")
    yield "schema add-column", _cli("schema", "add-column", at, "region", "VARCHAR(8)", "--comment", "where", "--json")
    yield "schema alter-column", _cli("schema", "alter-column", at, "region", "--type", "STRING", "--json")
    yield "schema rename-column", _cli("schema", "rename-column", at, "region", "area", "--json")
    yield "schema drop-column", _cli("schema", "drop-column", at, "area", "--json")
    yield "schema", _cli("schema", at, "--json")
    audit = _cli("audit", at, "--json")
    yield "audit", audit
    deleted = next(path for path in _deleted_by(at) if path)
    yield "audit --path", _cli("audit", at, "--path", deleted, "--json")
    yield "audit", _cli("audit", at, "--since", "1 d", "--run", audit["runs"][0]["run_id"], "--json")
    window = ("maintenance.undo-window=1 d", "snapshot.num-retained.min=1", "snapshot.num-retained.max=1")
    yield "options set", _cli("options", "set", at, *window, "--json")
    expired = _cli("expire", at, "--json")
    assert expired["run_id"] and expired["deferred_files"] > 0, expired
    yield "expire", expired
    yield "undo", _cli("undo", at, expired["run_id"], "--dry-run", "--json")
    yield "undo", _cli("undo", at, expired["run_id"], "--json")


def _deleted_by(at: str) -> list[str]:
    """Paths the ledger of the table at ``at`` records (read with pyarrow as a user would)."""
    ledger = pq.read_table(str(Path(at) / ".tablefmt" / "audit"))
    return [p for p in ledger["path"].to_pylist() if p]


def banned_keys(value: Any, where: str = "") -> list[str]:
    """Every key (recursively) the vocabulary replaced, as a path."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in BANNED:
                found.append(f"{where}.{key}")
            found += banned_keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += banned_keys(item, f"{where}[{index}]")
    return found


def absolute_paths(value: Any, where: str = "") -> list[str]:
    """Every string (recursively) that is an absolute path or URL, but a table's own ``location`` (``table``)."""
    if isinstance(value, dict):
        items = [(k, v) for k, v in value.items() if k not in {"location", "table"}]
        return [p for k, v in items for p in absolute_paths(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in absolute_paths(v, f"{where}[{i}]")]
    if isinstance(value, str) and (value.startswith("/") or "://" in value):
        return [f"{where}: {value}"]
    return []


def type_errors(value: Any, kind: str, docs: dict[str, dict[str, str]], where: str) -> list[str]:
    """Why ``value`` is not of the documented ``kind`` (empty when it is)."""
    options = [k.strip() for k in kind.split("|")]
    if value is None:
        return [] if "null" in options else [f"{where}: null, documented {kind}"]
    for option in options:
        if not _fits(value, option):
            continue
        return _nested_errors(value, option, docs, where)
    return [f"{where}: {value!r} is not {kind}"]


def _fits(value: Any, kind: str) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind in {"string", "path"}:
        return isinstance(value, str)
    if kind == "ISO time":
        return isinstance(value, str) and bool(ISO.match(value))
    if kind == "partition":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if kind.startswith("list["):
        return isinstance(value, list) and all(_fits(item, kind[5:-1]) for item in value)
    if kind.startswith("map["):
        return isinstance(value, dict) and all(_fits(item, kind[4:-1]) for item in value.values())
    if kind in {"object", "results"} or kind.startswith("{"):
        return isinstance(value, dict)
    raise AssertionError(f"docs/json.md uses an unknown type {kind!r}")


def _nested_errors(value: Any, kind: str, docs: dict[str, dict[str, str]], where: str) -> list[str]:
    """Paths must be relative; ``{section}`` objects are checked against their own table."""
    if kind == "path" and (value.startswith("/") or "://" in value):
        return [f"{where}: {value!r} is not relative to the table root"]
    if kind.startswith(("list[", "map[")):
        inner = kind[kind.index("[") + 1 : -1]
        items = enumerate(value) if isinstance(value, list) else value.items()
        return [e for key, item in items for e in _nested_errors(item, inner, docs, f"{where}[{key}]")]
    if kind.startswith("{"):
        return document_errors(value, kind[1:-1], docs, where)
    if kind == "results":  # {operation name: that operation's document}
        return [e for name, item in value.items() for e in document_errors(item, name, docs, f"{where}[{name}]")]
    return []


def document_errors(value: Any, section: str, docs: dict[str, dict[str, str]], where: str = "") -> list[str]:
    """Why an object is not exactly what docs/json.md's ``section`` documents."""
    if section == "operation":  # an operation's own document, named by its "operation" key
        section = value.get("operation") or ""
        value = {k: v for k, v in value.items() if k != "operation"}
    keys = docs.get(section)
    if keys is None:
        return [f"{where}: docs/json.md has no section `{section}`"]
    errors = []
    if set(value) != set(keys):
        errors.append(f"{where or section}: undocumented {sorted(set(value) - set(keys))}, "
                      f"missing {sorted(set(keys) - set(value))}")  # fmt: skip
    for key in set(value) & set(keys):
        kind = keys[key].replace("$operation", str(value.get("operation")))  # a rule's dry run: its operation's
        errors += type_errors(value[key], kind, docs, f"{where or section}.{key}")
    return errors


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any]]:
    return list(every_command(tmp_path_factory.mktemp("vocabulary")))


def test_every_command_has_a_section(outputs: list[tuple[str, Any]]) -> None:
    docs = documented()
    assert {name for name, _ in outputs} <= set(docs)
    assert {"snapshots", "files", "partitions", "check", "expire", "maintain", "report"} <= set(docs)


def test_every_document_is_exactly_as_documented(outputs: list[tuple[str, Any]]) -> None:
    docs = documented()
    errors = []
    for name, document in outputs:
        items = document if isinstance(document, list) else [document]
        assert items, f"{name} printed nothing to check"
        for index, item in enumerate(items):
            errors += document_errors(item, name, docs, f"{name}[{index}]")
    assert errors == []


def test_no_key_anywhere_uses_a_replaced_spelling(outputs: list[tuple[str, Any]]) -> None:
    assert [(name, key) for name, document in outputs for key in banned_keys(document)] == []


def test_no_path_anywhere_is_absolute(outputs: list[tuple[str, Any]]) -> None:
    assert [(name, path) for name, document in outputs for path in absolute_paths(document)] == []


def test_every_time_has_its_ms_and_every_deleting_command_its_counts(outputs: list[tuple[str, Any]]) -> None:
    docs = documented()
    for section, keys in docs.items():
        for key, kind in keys.items():
            if kind.startswith("ISO time"):
                assert keys.get(f"{key}_ms", "").startswith("int"), (section, key)
            if key.endswith("_files"):
                assert kind.startswith("int"), (section, key, "counts of files end in _files; lists are *_paths")
    for deleting in ("expire", "remove-orphans", "expire-partitions", "expire-records", "compact"):
        assert {"dry_run", "deleted_files", "deleted_bytes", "deleted_paths", "backlog"} <= set(docs[deleting])


def test_the_deleting_commands_report_what_they_deleted(outputs: list[tuple[str, Any]]) -> None:
    real = {name: doc for name, doc in outputs if isinstance(doc, dict) and doc.get("dry_run") is False}
    assert real["remove-orphans"]["deleted_files"] == len(real["remove-orphans"]["deleted_paths"]) > 0
    assert real["expire"]["deleted_files"] == len(real["expire"]["deleted_paths"]) > 0
    assert all(not p.startswith("/") for p in real["expire"]["deleted_paths"])
