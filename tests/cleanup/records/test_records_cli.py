"""``tablefmt expire-records`` and ``tablefmt compact``: commands built from the operations' parameters, --json,
dry runs that list what the real run does, one-line errors. Times are 2020 (expired) or 2099 (kept) so any real
clock decides them the same way."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner
from support.ttl_tables import TIME_TYPES, ttl_table

from tableformat.cli.main import cli

KIND = TIME_TYPES[6]  # TIMESTAMP WITH LOCAL TIME ZONE
OLD = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
NEW = dt.datetime(2099, 1, 1, tzinfo=dt.timezone.utc)


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _table(tmp_path: Path) -> str:
    table = ttl_table(tmp_path / "t", KIND, partition=True)
    for i, times in enumerate([[OLD, OLD], [OLD, NEW, None], [NEW], [NEW], [NEW], [NEW]]):
        data = {"id": list(range(10 * i, 10 * i + len(times))), "ts": times, "p": [1] * len(times)}
        table.append(pa.table(data, schema=table.arrow_schema))
    return table.location


def test_expire_records_json_dry_run_then_real_run(tmp_path: Path) -> None:
    location = _table(tmp_path)
    code, out, _ = _run("expire-records", location, "--dry-run", "--json")
    dry = json.loads(out)
    assert code == 0 and dry["dry_run"] is True and dry["snapshot_ids"] == [] and dry["written_paths"] == []
    assert len(dry["dropped_paths"]) == 1 and len(dry["rewritten_paths"]) == 1 and dry["expired_records"] == 3
    code, out, _ = _run("expire-records", location, "--expire-time", "30d", "--time-field", "ts", "--json")
    real = json.loads(out)
    assert code == 0 and real["dry_run"] is False and len(real["snapshot_ids"]) == 2
    for key in ("dropped_paths", "rewritten_paths", "expired_records", "reclaimable_bytes"):
        assert real[key] == dry[key], key
    assert len(real["written_paths"]) == 1 and real["written_paths"][0].startswith("p=1/bucket-0/data-")
    code, out, _ = _run("expire-records", location, "--max-files", "5")
    assert code == 0 and out.startswith("expire-records: dropped 0 file(s), rewrote 0 file(s)")


def test_compact_json_and_text(tmp_path: Path) -> None:
    location = _table(tmp_path)
    code, out, _ = _run("compact", location, "--partition", "p=1", "--dry-run", "--json")
    dry = json.loads(out)
    assert code == 0 and dry["groups"] == 1 and len(dry["compacted_paths"]) == 6 and dry["read_records"] == 9
    code, out, _ = _run("compact", location, "--target-file-size", "64 mb")
    assert code == 0 and out.startswith("compact: merged 6 file(s) in 1 group(s) into 1 file(s), 9 row(s) read, 3")


def test_bad_input_is_one_line_and_non_zero(tmp_path: Path) -> None:
    location = _table(tmp_path)
    for args in (
        ("expire-records", location, "--time-field", "nope"),
        ("expire-records", location, "--expire-time", "soon"),
        ("compact", location, "--partition", "x"),
        ("compact", location, "--target-file-size", "huge"),
    ):
        code, out, err = _run(*args)
        assert code != 0 and out == "" and len(err.strip().splitlines()) == 1, (args, err)
