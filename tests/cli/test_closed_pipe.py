"""A reader that closes stdout early (``tablefmt ... | head -1``) never changes the exit status: 0, no error line.

The pipe's read end is closed before the command starts, so its first write fails with EPIPE every time (a reader
that closes it later only makes that failure depend on timing, which is what made the status random before)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.events import build_events

COMMANDS = [
    ["options", "{table}", "--all"],
    ["files", "{table}", "--json"],
    ["snapshots", "{table}"],
    ["check", "{table}", "--json"],
    ["expire", "{table}", "--dry-run"],
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_events(tmp_path_factory.mktemp("pipe") / "events").location


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
def test_closed_stdout_exits_0_without_an_error_line(table: str, argv: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tableformat.cli.main", *(a.format(table=table) for a in argv)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (0, "")


def test_the_same_commands_exit_0_when_read_to_the_end(table: str, tmp_path: Path) -> None:
    for argv in COMMANDS:
        done = subprocess.run(
            [sys.executable, "-m", "tableformat.cli.main", *(a.format(table=table) for a in argv)],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0 and done.stdout, (argv, done.stderr)
