"""The ledger on S3 (SeaweedFS): a run's record is one conditional PUT under ``.tablefmt/audit/``, never
overwritten, and read back by ``tablefmt audit``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from support.s3_requests import RequestLog

from tableformat.layout import AUDIT_DIR, MAINTAIN_DIR
from tableformat.model.audit import AuditRun, FileColumns
from tableformat.table import Table

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64())])


def test_an_expiration_on_s3_writes_its_record_with_one_conditional_put(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(f"{url}/ledger-s3/t", SCHEMA, [], {"write-only": "true"}, options)
    for i in range(5):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    log = RequestLog().attach(table.context.io)
    conditional: list[str] = []

    def note_condition(model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name == "PutObject" and f"/{MAINTAIN_DIR}/{AUDIT_DIR}/" in str(params.get("Key")):
            conditional.append(str(params.get("IfNoneMatch")))

    table.context.io.fs.s3.meta.events.register("before-parameter-build.s3", note_condition)  # type: ignore[attr-defined]
    result = table.maintenance.expire_snapshots(retain_min=1, time_retained=0)
    assert len(result.deleted_paths) == 4 + 8
    puts = [c.key for c in log.of("PutObject") if f"/{MAINTAIN_DIR}/{AUDIT_DIR}/" in c.key]
    [run] = table.audit()
    assert puts == [f"{table.context.layout.audit_file(run.run.run_id + '.parquet')}".split("/", 1)[1]]
    assert conditional == ["*"]  # If-None-Match: created, never overwritten
    assert run.run.counts.deleted_files == len(result.deleted_paths)
    assert {f.path for f in table.audit_files(run.run.run_id)} == set(result.deleted_paths)
    assert [e.run.run_id for e in table.audit_path("snapshot/snapshot-1")] == [run.run.run_id]

    record = table.context.layout.audit_file(run.run.run_id + ".parquet")
    before = table.context.io.read_bytes(record)
    other = AuditRun(run_id=run.run.run_id, operation="expire", started_ms=0, finished_ms=0, outcome="completed")
    one_file = FileColumns(paths=["x"], sizes=[1], reasons=["test"], states=["deleted"])
    assert not table.context.store.write_audit_record(other, one_file)  # the same name: never replaced
    assert table.context.io.read_bytes(record) == before
