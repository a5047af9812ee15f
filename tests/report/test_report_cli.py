"""``tablefmt report`` as operators run it: the same targets as ``tablefmt maintain``, --html and --json, the
maintain config's include/exclude and overrides, exit codes (0 ok, 1 a table failed, 2 usage), nothing changed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.events import build_events
from support.tables import tree_bytes
from support.warehouses import make_warehouse

from tableformat.cleanup.maintainer import discover_all
from tableformat.cli.main import cli


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["report", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_warehouse_report_changes_nothing_and_covers_what_maintain_would(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    make_warehouse(wh, {"sales": ["orders", "returns"], "web": ["clicks"]}, commits=5)
    build_events(wh / "web.db" / "events")
    before = tree_bytes(wh)
    html = tmp_path / "out" / "report.html"
    html.parent.mkdir()
    code, out, err = _run(str(wh), "--html", str(html))
    assert code == 0, err
    lines = out.splitlines()
    names = [t.name for t in discover_all([str(wh)])]
    assert [line.split(":")[0] for line in lines if not line.startswith(("  ", "wrote"))] == names
    assert lines[-1].startswith(f"wrote {html} (4 table(s), ")
    assert tree_bytes(wh) == before
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "4 tables" in page and "web.events" in page


def test_json_is_every_figure_per_table(tmp_path: Path) -> None:
    table = build_events(tmp_path / "events")
    code, out, _ = _run(table.location, "--json", "--since", "2d")
    assert code == 0
    (document,) = [json.loads(line) for line in out.splitlines()]
    assert document["table"] == table.location
    rules = {r["operation"]: r for r in document["rules"]}
    assert list(rules) == ["expire-partitions", "expire-records", "compact", "erase", "expire", "remove-orphans"]
    assert [name for name, r in rules.items() if r["configured"]] == ["expire-partitions", "expire", "remove-orphans"]
    dry = table.maintenance.run("expire", dry_run=True)
    assert rules["expire"]["frees_bytes"] == dry.deleted_bytes
    assert document["keep_up"]["window_ms"] == 2 * 86_400_000
    points = document["storage"]["points"]
    assert [p["snapshot_id"] for p in points] == table.context.store.snapshot_ids()
    assert document["live_bytes"] == points[-1]["live_bytes"]


def test_include_exclude_and_overrides_come_from_the_maintain_config(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    make_warehouse(wh, {"sales": ["orders", "returns"]}, commits=5)
    config = tmp_path / "maintain.toml"
    config.write_text('exclude = ["*.returns"]\n[tables."sales.orders"]\n"snapshot.num-retained.min" = "4"\n')
    code, out, _ = _run(str(wh), "--json", "--config", str(config))
    assert code == 0
    (document,) = [json.loads(line) for line in out.splitlines()]
    assert document["table"] == "sales.orders"
    expire = next(r for r in document["rules"] if r["operation"] == "expire")["dry_run"]
    assert expire["expired_snapshot_ids"] == [1]  # 5 snapshots, 4 kept by the override (the table says 2)


def test_usage_errors_exit_2_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = _run(str(tmp_path / "missing"), "--html", str(tmp_path / "x.html"))
    assert (code, err) == (2, f"error: {tmp_path / 'missing'}: does not exist\n")
    table = build_events(tmp_path / "t", days=3, orphans=False)
    code, _, err = _run(table.location, "--json", "--since", "soon")
    assert code == 2 and "soon" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()


def test_a_table_that_cannot_be_read_exits_1_after_the_others(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    tables = make_warehouse(wh, {"sales": ["orders", "returns"]}, commits=3)
    (tables["sales.orders"] / "schema" / "schema-0").write_text("{not json")
    html = tmp_path / "r.html"
    code, out, _ = _run(str(wh), "--html", str(html))
    assert code == 1
    assert out.splitlines()[0].startswith("FAILED sales.orders: ")
    assert out.splitlines()[1].startswith("sales.returns: ")
    assert "sales.returns" in html.read_text()


def test_text_mode_is_a_line_per_table(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    make_warehouse(wh, {"sales": ["orders", "returns"]}, commits=3)
    before = tree_bytes(wh)
    code, out, err = _run(str(wh))
    assert (code, err) == (0, "")
    lines = [line for line in out.splitlines() if not line.startswith("  ")]
    assert [line.split(":")[0] for line in lines] == ["sales.orders", "sales.returns"]
    assert all(" live, " in line and " reclaimable now (" in line and line.endswith("/day") for line in lines)
    assert tree_bytes(wh) == before


def test_html_without_matplotlib_is_a_usage_error_before_any_table_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tableformat.report import charts

    monkeypatch.setattr(charts, "_MPL", None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    read: list[str] = []
    monkeypatch.setattr("tableformat.cli.report_command.warehouse_report", lambda *a, **k: read.append("read"))
    html = tmp_path / "r.html"
    code, out, err = _run(str(tmp_path), "--html", str(html))
    assert (code, out) == (2, "")
    assert err == "error: the HTML report draws its charts with matplotlib: pip install 'tablefmt[report]'\n"
    assert read == [] and not html.exists()
