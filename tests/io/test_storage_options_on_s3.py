"""``--storage-option`` values reach the S3 FileIO typed: ``anon=false`` is the boolean False, not the string "false".

Against SeaweedFS with credentials required: a truthy ``anon`` would send unsigned requests, which it refuses.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from tableformat import Table
from tableformat.cli.common import open_table
from tableformat.cli.main import cli

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([("id", pa.int64())])


def flags(options: dict[str, Any], *extra: str) -> list[str]:
    pairs = [f"{key}={options[key]}" for key in ("key", "secret", "endpoint_url")]
    pairs += [f"client_kwargs.region_name={options['client_kwargs']['region_name']}", *extra]
    return [part for pair in pairs for part in ("--storage-option", pair)]


def pairs_of(command_flags: list[str]) -> list[str]:
    return command_flags[1::2]


def test_anon_false_reaches_the_file_io_as_a_boolean(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    Table.create(url, SCHEMA, storage_options=options).append(pa.table({"id": [1]}, schema=SCHEMA))
    given = flags(options, "anon=false", "max_concurrency=4")
    table = open_table(url, pairs_of(given))
    assert table.context.io.storage_options() == {
        "key": options["key"],
        "secret": options["secret"],
        "endpoint_url": options["endpoint_url"],
        "client_kwargs": {"region_name": options["client_kwargs"]["region_name"]},
        "anon": False,
        "max_concurrency": 4,
    }
    fs = table.context.io.fsspec_filesystem()
    assert (fs.anon, fs.max_concurrency) == (False, 4)
    result = CliRunner().invoke(cli, ["snapshots", url, "--json", *given])
    assert (result.exit_code, result.stderr) == (0, "")
    assert [s["snapshot_id"] for s in json.loads(result.stdout)] == [1]
