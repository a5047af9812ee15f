"""Write the pypaimon 2.1.0 manifest samples that tests/unit/test_codec_projection.py decodes.

Run in the interop environment (pypaimon pins its own pyarrow and fsspec), from the repository root:

    .tox/interop/bin/python tests/resources/pypaimon_manifests/make_samples.py

Each table's ``manifest/`` directory (manifests and manifest lists, nothing else) is copied to
``tests/resources/pypaimon_manifests/<table>/manifest/``; the samples are committed, so the test never skips.
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for interop.helpers

from interop.helpers import Paimon  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        paimon = Paimon(Path(scratch) / "warehouse")
        schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32()), ("n", pa.int32())])
        static = {"dynamic-partition-overwrite": "false"}

        def rows(start: int, count: int, day: dt.date) -> pa.Table:
            ids = list(range(start, start + count))
            return pa.table(
                {"id": ids, "name": [f"n{i}" * (i % 4) for i in ids], "day": [day] * count, "n": [i % 7 for i in ids]},
                schema=schema,
            )

        d1, d2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
        paimon.create_table("plain", schema, options=static)  # unpartitioned, stats off (pypaimon's default)
        paimon.append("plain", rows(0, 5, d1))
        paimon.append("plain", rows(5, 5, d2))
        paimon.overwrite("plain", rows(10, 3, d1), {})

        paimon.create_table("by_day", schema, ["day"], {**static, "metadata.stats-mode": "full"})
        paimon.append("by_day", rows(0, 6, d1))
        paimon.append("by_day", rows(6, 6, d2))
        paimon.overwrite("by_day", rows(12, 2, d1), {"day": d1})
        paimon.drop_partitions("by_day", [{"day": d2}])

        paimon.create_table("bucketed", schema, ["name"], {**static, "bucket": "3", "bucket-key": "id"})
        paimon.append("bucketed", rows(0, 12, d1))
        paimon.append("bucketed", rows(12, 12, d2))

        for name in ("plain", "by_day", "bucketed"):
            target = HERE / name / "manifest"
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for source in sorted(Path(paimon.path(name), "manifest").iterdir()):
                if source.name.startswith("manifest-"):
                    shutil.copyfile(source, target / source.name)
            print(f"{name}: {len(list(target.iterdir()))} files")


if __name__ == "__main__":
    main()
