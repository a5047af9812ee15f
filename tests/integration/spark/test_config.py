"""Option parsing and split planning of the Spark data source (pure Python: no SparkSession needed)."""

from __future__ import annotations

import pytest
from support.ci import optional

optional("pyspark")


from tableformat.errors import ValidationError
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry
from tableformat.spark.config import ReadConfig, WriteConfig
from tableformat.spark.reader import SplitSizing, bin_pack

MB = 1024**2


def test_read_options() -> None:
    config = ReadConfig.parse(
        {
            "path": "s3://b/t",
            "scan.tag-name": "v1",
            "partitions": "dt=1,h=2;dt=3",
            "storage.endpoint_url": "http://x",
            "storage.anon": "TRUE",
            "storage-options": '{"client_kwargs": {"region_name": "eu"}}',
            "source.split.target-size": "64 mb",
        }
    )
    assert (config.path, config.tag, config.snapshot_id, config.timestamp_ms) == ("s3://b/t", "v1", None, None)
    assert config.partition_filter == [{"dt": "1", "h": "2"}, {"dt": "3"}]
    assert config.storage_options == {"endpoint_url": "http://x", "anon": True, "client_kwargs": {"region_name": "eu"}}
    assert config.split_target_size == 64 * MB
    with pytest.raises(ValidationError, match="at most one"):
        ReadConfig.parse({"path": "/t", "scan.snapshot-id": "1", "scan.timestamp-millis": "5"})
    with pytest.raises(ValidationError, match="unknown read option"):
        ReadConfig.parse({"path": "/t", "scan.snapshot_id": "1"})
    with pytest.raises(ValidationError, match="table path"):
        ReadConfig.parse({})


def test_storage_keys_are_typed_and_nest() -> None:
    options = {
        "path": "s3://b/t",
        "storage.anon": "false",
        "storage.use_ssl": "False",
        "storage.max_concurrency": "4",
        "storage.default_block_size": "8388608",
        "storage.endpoint_url": "http://127.0.0.1:8333",
        "storage.client_kwargs.region_name": "eu",
        "storage.config_kwargs.connect_timeout": "2.5",
        "storage.config_kwargs.max_pool_connections": "20",
        "storage-options": '{"client_kwargs": {"verify": false}, "s3_additional_kwargs": {"ACL": "private"}}',
    }
    expected = {
        "anon": False,
        "use_ssl": False,
        "max_concurrency": 4,
        "default_block_size": 8388608,
        "endpoint_url": "http://127.0.0.1:8333",
        "client_kwargs": {"verify": False, "region_name": "eu"},
        "config_kwargs": {"connect_timeout": 2.5, "max_pool_connections": 20},
        "s3_additional_kwargs": {"ACL": "private"},
    }
    assert ReadConfig.parse(options).storage_options == expected
    assert WriteConfig.parse(options, overwrite=False).storage_options == expected
    with pytest.raises(ValidationError) as caught:
        ReadConfig.parse({"path": "s3://b/t", "storage.max_concurrency": "x"})
    assert str(caught.value) == "storage option 'storage.max_concurrency' must be an integer, got 'x'"
    with pytest.raises(ValidationError) as caught:
        WriteConfig.parse({"path": "s3://b/t", "storage.anon": "no"}, overwrite=False)
    assert str(caught.value) == "storage option 'storage.anon' must be true or false, got 'no'"


def test_write_options() -> None:
    config = WriteConfig.parse(
        {"path": "/t", "partition": "dt=2024-01-01", "partitionBy": "dt", "snapshot.num-retained.max": "5"},
        overwrite=True,
    )
    assert config.static_partition == {"dt": "2024-01-01"}
    assert config.partition_keys == ("dt",)
    assert config.table_options == {"snapshot.num-retained.max": "5"}
    assert config.dynamic is None
    dynamic = WriteConfig.parse({"path": "/t", "dynamic-partition-overwrite": "true"}, overwrite=True)
    assert dynamic.dynamic is True and dynamic.table_options == {}  # a per-job switch, never stored
    with pytest.raises(ValidationError, match="not both"):
        WriteConfig.parse({"path": "/t", "partition": "a=1", "dynamic-partition-overwrite": "true"}, overwrite=True)
    with pytest.raises(ValidationError, match="overwrite"):
        WriteConfig.parse({"path": "/t", "dynamic-partition-overwrite": "true"}, overwrite=False)
    with pytest.raises(ValidationError, match="disagree"):
        WriteConfig.parse({"path": "/t", "partitionby": "a", "partition-keys": "b"}, overwrite=False)
    with pytest.raises(ValidationError, match="snapshot.num-retained.min"):
        WriteConfig.parse({"path": "/t", "snapshot.num-retained.min": "zero"}, overwrite=False)


def _entry(name: str, size: int) -> ManifestEntry:
    meta = DataFileMeta(file_name=name, file_size=size, row_count=1)
    return ManifestEntry(kind=FileKind.ADD, partition=bytes(12), bucket=0, total_buckets=-1, file=meta)


def test_bin_pack_spreads_small_tables_and_caps_split_size() -> None:
    entries = [_entry(f"f{i}", 10 * MB) for i in range(8)]
    two_cores = bin_pack(entries, SplitSizing(target_size=128 * MB, open_file_cost=4 * MB, parallelism=2))
    assert sorted(len(s) for s in two_cores) == [4, 4]
    # Spark's rule: a split closes when the next file's bytes (not bytes + open cost) would overflow it, so eight
    # files of slightly different sizes still make two splits of four on two cores (not 3 + 4 + 1).
    uneven = [
        _entry(f"u{i}", size) for i, size in enumerate((903239, 882156, 881243, 885520, 886794, 886222, 896267, 899672))
    ]
    splits = bin_pack(uneven, SplitSizing(target_size=128 * MB, open_file_cost=4 * MB, parallelism=2))
    assert [len(s) for s in splits] == [4, 4]
    assert [e.file.file_size for e in splits[0]] == [903239, 899672, 896267, 886794]
    big = [_entry(f"g{i}", 100 * MB) for i in range(4)]
    capped = bin_pack(big, SplitSizing(target_size=128 * MB, open_file_cost=4 * MB, parallelism=1))
    assert [len(s) for s in capped] == [1, 1, 1, 1]
    tiny = [_entry(f"h{i}", 1000) for i in range(64)]
    assert len(bin_pack(tiny, SplitSizing(target_size=128 * MB, open_file_cost=4 * MB, parallelism=4))) == 4
    assert bin_pack([], SplitSizing(target_size=128 * MB, open_file_cost=4 * MB, parallelism=4)) == []
