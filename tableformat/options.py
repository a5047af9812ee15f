"""The one option registry: every table option tablefmt reads, with its type, default and documentation.

Keys are Paimon's. ``docs/options.md`` is generated from this registry (``python -m tableformat.options_doc``) and a
test fails when it is stale.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from tableformat.errors import UnknownOptionError, ValidationError
from tableformat.option_types import BOOL, DURATION, INT, INT32_MAX, MEMORY, PRICE, STRING, Option
from tableformat.paimon_option_keys import PAIMON_OPTION_KEYS, PAIMON_OPTION_PATTERNS

T = TypeVar("T")


REGISTRY: dict[str, Option[object]] = {}


def _register(option: Option[T]) -> Option[T]:
    REGISTRY[option.key] = option  # type: ignore[assignment]
    return option


# --- format and layout -------------------------------------------------------------------------------------------
BUCKET = _register(
    Option(
        "bucket",
        INT,
        -1,
        "Number of buckets; -1 = bucket-unaware append table (all files in bucket-0); -2 = Paimon's postponed buckets.",
        minimum=-2,
    )
)
BUCKET_KEY = _register(
    Option("bucket-key", STRING, None, "Comma-separated bucket key columns for fixed-bucket tables.")
)
ADD_COLUMN_BEFORE_PARTITION = _register(
    Option(
        "add-column-before-partition",
        BOOL,
        False,
        "A column added without a position goes before the first partition column instead of last.",
    )
)
FILE_FORMAT = _register(Option("file.format", STRING, "parquet", "Data file format; tablefmt writes parquet."))
FILE_COMPRESSION = _register(Option("file.compression", STRING, "zstd", "Parquet compression codec for data files."))
FILE_COMPRESSION_ZSTD_LEVEL = _register(
    Option(
        "file.compression.zstd-level",
        INT,
        1,
        "zstd level of data files, manifests and manifest lists (Paimon's default, 1: fast; higher levels write "
        "smaller files, slower).",
        minimum=1,
        maximum=22,
    )
)
DATA_FILE_PREFIX = _register(Option("data-file.prefix", STRING, "data-", "Prefix of data file names."))
CHANGELOG_FILE_PREFIX = _register(
    Option("changelog-file.prefix", STRING, "changelog-", "Prefix of changelog file names.")
)
DATA_FILE_PATH_DIRECTORY = _register(
    Option(
        "data-file.path-directory",
        STRING,
        None,
        "Directory under the table root that holds the partition and bucket directories (e.g. `data`). Must stay "
        "inside the root: an absolute path, another scheme or `..` out of the root is refused.",
    )
)
DATA_FILE_EXTERNAL_PATHS = _register(
    Option(
        "data-file.external-paths",
        STRING,
        None,
        "Paimon's data directories outside the table root. tablefmt refuses to write to, expire or clean tables "
        "that set it (or `data-file.external-paths.strategy`, `global-index.external-path`).",
    )
)
DATA_FILE_EXTERNAL_PATHS_STRATEGY = _register(
    Option(
        "data-file.external-paths.strategy",
        STRING,
        None,
        "Paimon's choice among external paths; any value but `none` is refused like `data-file.external-paths`.",
    )
)
GLOBAL_INDEX_EXTERNAL_PATH = _register(
    Option(
        "global-index.external-path",
        STRING,
        None,
        "Paimon's index directory outside the table root; refused like `data-file.external-paths`.",
    )
)
PARTITION_DEFAULT_NAME = _register(
    Option(
        "partition.default-name",
        STRING,
        "__DEFAULT_PARTITION__",
        "Directory name used for a null or empty partition value.",
    )
)
PARTITION_LEGACY_NAME = _register(
    Option(
        "partition.legacy-name",
        BOOL,
        True,
        "Name DATE partition directories by days since epoch (Paimon's legacy naming).",
    )
)
TARGET_FILE_SIZE = _register(
    Option("target-file-size", MEMORY, 128 * 1024**2, "Roll data files at about this size.", minimum=1)
)
ROW_GROUP_ROWS = _register(
    Option(
        "parquet.row-group.rows", INT, 1_000_000, "Maximum rows per Parquet row group written by tablefmt.", minimum=1
    )
)
DYNAMIC_PARTITION_OVERWRITE = _register(
    Option(
        "dynamic-partition-overwrite",
        BOOL,
        False,
        "If true, overwrite without an explicit partition replaces only the partitions present in the data. "
        "tablefmt defaults to false (whole-table or named-partition overwrite); Paimon Java defaults to true.",
    )
)

# --- commit ------------------------------------------------------------------------------------------------------
COMMIT_MAX_RETRIES = _register(
    Option("commit.max-retries", INT, 50, "Attempts at the next snapshot id before a commit gives up.", minimum=1)
)
COMMIT_MIN_RETRY_WAIT = _register(
    Option("commit.min-retry-wait", DURATION, 10, "First back-off wait between commit attempts.", maximum=86_400_000)
)
COMMIT_MAX_RETRY_WAIT = _register(
    Option("commit.max-retry-wait", DURATION, 10_000, "Largest back-off wait between attempts.", maximum=86_400_000)
)
COMMIT_DEDUP_USERS = _register(
    Option(
        "commit.dedup.retained-users",
        INT,
        100,
        "How many recent (commitUser, commitIdentifier) pairs every snapshot carries so a retried commit is "
        "recognised even after older snapshots are expired.",
        minimum=1,
    )
)
MANIFEST_TARGET_FILE_SIZE = _register(
    Option("manifest.target-file-size", MEMORY, 8 * 1024**2, "Manifest files are merged up to this size.")
)
MANIFEST_FULL_COMPACTION_SIZE = _register(
    Option(
        "manifest.full-compaction-threshold-size",
        MEMORY,
        16 * 1024**2,
        "Rewrite all manifests that need a change once their total size reaches this.",
    )
)
MANIFEST_MERGE_MIN_COUNT = _register(
    Option(
        "manifest.merge-min-count", INT, 30, "Merge the trailing small manifests once there are this many.", minimum=1
    )
)
SINGLE_WRITER_UNSAFE_STORE = _register(
    Option(
        "commit.allow-non-atomic-store",
        BOOL,
        False,
        "Allow commits on a store without atomic create-if-absent (no S3 If-None-Match). Only safe when exactly "
        "one writer ever commits to the table.",
    )
)
WRITE_ONLY = _register(
    Option("write-only", BOOL, False, "If true, commits never run maintenance (expiration); run it separately.")
)

# --- expiration --------------------------------------------------------------------------------------------------
SNAPSHOT_NUM_RETAINED_MIN = _register(
    Option("snapshot.num-retained.min", INT, 10, "The newest N snapshots never expire.", minimum=1)
)
SNAPSHOT_NUM_RETAINED_MAX = _register(
    Option(
        "snapshot.num-retained.max",
        INT,
        INT32_MAX,
        "Snapshots beyond the newest N expire regardless of age.",
        minimum=1,
    )
)
SNAPSHOT_TIME_RETAINED = _register(
    Option(
        "snapshot.time-retained",
        DURATION,
        3_600_000,
        "A snapshot expires only once the snapshot after it is older than this.",
    )
)
CHANGELOG_NUM_RETAINED_MIN = _register(
    Option("changelog.num-retained.min", INT, None, "Unset: snapshot.num-retained.min; above it: decoupled.", minimum=1)
)
CHANGELOG_NUM_RETAINED_MAX = _register(
    Option("changelog.num-retained.max", INT, None, "Unset: snapshot.num-retained.max; above it: decoupled.", minimum=1)
)
CHANGELOG_TIME_RETAINED = _register(
    Option("changelog.time-retained", DURATION, None, "Unset: snapshot.time-retained; longer: decoupled.")
)
CHANGELOG_PRODUCER = _register(Option("changelog-producer", STRING, "none", "none, input, lookup or full-compaction."))
INDEX_FILE_IN_DATA_FILE_DIR = _register(
    Option("index-file-in-data-file-dir", BOOL, False, "Index files live in the bucket directories, not in index/.")
)
SNAPSHOT_EXPIRE_LIMIT = _register(
    Option("snapshot.expire.limit", INT, 10, "At most this many snapshots expire per run.", minimum=1)
)
SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = _register(
    Option(
        "snapshot.clean-empty-directories",
        BOOL,
        False,
        "Remove partition and bucket directories that expiration left empty (local and HDFS-like stores only).",
    )
)
CONSUMER_EXPIRATION_TIME = _register(
    Option(
        "consumer.expiration-time",
        DURATION,
        None,
        "Consumer files not updated for this long stop protecting snapshots.",
    )
)
FILE_OPERATION_THREAD_NUM = _register(
    Option(
        "file-operation.thread-num",
        INT,
        8,
        "Threads for parallel metadata reads and deletes. On the local filesystem orphan cleanup and check read "
        "metadata in the calling thread unless this option is set (decoding is CPU-bound there); deletes use it.",
        minimum=1,
    )
)
ORPHAN_OLDER_THAN = _register(
    Option(
        "orphan-files.older-than",
        DURATION,
        86_400_000,
        "Orphan cleanup only deletes unreferenced files older than this (minimum 1 h unless forced).",
    )
)
ORPHAN_CHECK_INTERVAL = _register(
    Option(
        "orphan-files.check-interval",
        DURATION,
        86_400_000,
        "How often `tablefmt maintain` runs orphan cleanup on the table (tablefmt's own; commits never run it).",
    )
)
ORPHAN_CANDIDATES_IN_MEMORY = _register(
    Option(
        "orphan-files.candidates-in-memory",
        INT,
        500_000,
        "Data-file candidates orphan cleanup holds in memory, and listed file sizes `check` holds (about 200 bytes "
        "each, so 100 MB by default); beyond this they are spilled to a local temporary directory and matched "
        "against the references bucket by bucket (docs/inventory.md, Memory; tablefmt's own).",
        minimum=1,
    )
)
ORPHAN_MAX_FILES = _register(
    Option(
        "orphan-files.max-files",
        INT,
        200_000,
        "At most this many orphans one `remove-orphans` run deletes; the rest wait for the next run (as `backlog`), "
        "so a run's memory stays bounded: about 1.3 KB per orphan (docs/inventory.md, Memory; tablefmt's own).",
        minimum=1,
    )
)
MAINTAIN_INTERVAL = _register(
    Option(
        "maintenance.check-interval",
        DURATION,
        3_600_000,
        "How often `tablefmt maintain` re-checks snapshot expiration (tag and consumer expiry included) on a table "
        "that did not change; any new snapshot makes it due at once (tablefmt's own).",
    )
)
AUDIT_ENABLED = _register(
    Option(
        "maintenance.audit.enabled",
        BOOL,
        True,
        "Record every run that deletes or retires files (maintenance operations, rollback, drop-partition, tag "
        "delete) in the audit ledger, `.tablefmt/audit/` (docs/audit.md); false = no record (tablefmt's own).",
    )
)
AUDIT_TIME_RETAINED = _register(
    Option(
        "maintenance.audit.time-retained",
        DURATION,
        90 * 86_400_000,
        "Audit records of runs that started longer ago than this are deleted by snapshot expiration and "
        "`tablefmt maintain` (never by orphan cleanup); default 90 d, a quarter of look-back (tablefmt's own).",
    )
)

UNDO_WINDOW = _register(
    Option(
        "maintenance.undo-window",
        DURATION,
        0,
        "How long files that maintenance takes out of the table stay on storage, so that `tablefmt undo` can give "
        "them back (docs/undo.md); a later run of any maintenance operation deletes them once due. 0 (default) = "
        "deleted at once, as asked: the window holds storage that retention was set to free (tablefmt's own).",
    )
)

# The price table of cost estimates (docs/cost.md): S3 Standard, us-east-1, per https://aws.amazon.com/s3/pricing/
_S3_PRICE = "US dollars; default S3 Standard's public price in us-east-1 (docs/cost.md; tablefmt's own)."
COST_PUT_PER_1000 = _register(
    Option("maintenance.cost.put-per-1000", PRICE, Decimal("0.005"), f"Price of 1,000 PUT requests. {_S3_PRICE}")
)
COST_LIST_PER_1000 = _register(
    Option("maintenance.cost.list-per-1000", PRICE, Decimal("0.005"), f"Price of 1,000 LIST requests. {_S3_PRICE}")
)
COST_GET_PER_1000 = _register(
    Option(
        "maintenance.cost.get-per-1000",
        PRICE,
        Decimal("0.0004"),
        f"Price of 1,000 GET, HEAD and all other requests. {_S3_PRICE}",
    )
)
COST_DELETE_PER_1000 = _register(
    Option(
        "maintenance.cost.delete-per-1000",
        PRICE,
        Decimal("0"),
        f"Price of 1,000 DeleteObjects requests (of up to 1,000 keys each; S3 does not charge deletes). {_S3_PRICE}",
    )
)
COST_STORAGE_GB_MONTH = _register(
    Option(
        "maintenance.cost.storage-gb-month",
        PRICE,
        Decimal("0.023"),
        f"Price of storing 1 GB (2^30 bytes) for a month (the first 50 TB). {_S3_PRICE}",
    )
)


# --- partition expiration ----------------------------------------------------------------------------------------
PARTITION_EXPIRATION_TIME = _register(
    Option(
        "partition.expiration-time",
        DURATION,
        None,
        "Partitions whose time is older than this are dropped (mark-delete OVERWRITE snapshots); unset = off.",
    )
)
PARTITION_EXPIRATION_CHECK_INTERVAL = _register(
    Option(
        "partition.expiration-check-interval",
        DURATION,
        3_600_000,
        "After a commit, partition expiration runs only if its last run (a snapshot property) is older than this; "
        "0 = after every commit.",
    )
)
PARTITION_EXPIRATION_STRATEGY = _register(
    Option(
        "partition.expiration-strategy",
        STRING,
        "values-time",
        "`values-time`: the partition's time comes from its values (pattern + formatter); `update-time`: the "
        "newest creation time of its live files.",
    )
)
PARTITION_TIMESTAMP_FORMATTER = _register(
    Option(
        "partition.timestamp-formatter",
        STRING,
        None,
        "Java DateTimeFormatter pattern of the filled timestamp pattern (e.g. `yyyyMMdd`); unset = "
        "`yyyy-MM-dd HH:mm:ss` or `yyyy-MM-dd` (1-2 digit month and day). DATE and TIMESTAMP columns need none.",
    )
)
PARTITION_TIMESTAMP_PATTERN = _register(
    Option(
        "partition.timestamp-pattern",
        STRING,
        None,
        "How partition values form a timestamp, e.g. `$dt`, `$dt $hour:00:00`, `$year-$month-$day`; unset = the "
        "first partition column.",
    )
)
PARTITION_TIMESTAMP_FORMAT_STRICT = _register(
    Option(
        "partition.timestamp-format.strict",
        BOOL,
        False,
        "Refuse a write whose partition values do not give a time (pattern + formatter) before anything is written.",
    )
)
PARTITION_EXPIRATION_MAX_NUM = _register(
    Option("partition.expiration-max-num", INT, 100, "At most this many partitions expire per run.", minimum=1)
)
PARTITION_EXPIRATION_BATCH_SIZE = _register(
    Option(
        "partition.expiration-batch-size",
        INT,
        None,
        "Drop expired partitions in snapshots of at most this many partitions; unset = one snapshot per run.",
        minimum=1,
    )
)

# --- primary-key tables (read side) ------------------------------------------------------------------------------
MERGE_ENGINE = _register(
    Option("merge-engine", STRING, "deduplicate", "Primary-key tables: deduplicate or first-row; others are refused.")
)
IGNORE_DELETE = _register(Option("ignore-delete", BOOL, None, "Primary-key reads skip -U/-D records (default false)."))
FIRST_ROW_IGNORE_DELETE = _register(Option("first-row.ignore-delete", BOOL, None, "Fallback key of ignore-delete."))
DEDUPLICATE_IGNORE_DELETE = _register(Option("deduplicate.ignore-delete", BOOL, None, "Fallback key of ignore-delete."))
SEQUENCE_FIELD = _register(
    Option("sequence.field", STRING, None, "Columns ordering a key's versions before the sequence number (a,b).")
)
SEQUENCE_FIELD_SORT_ORDER = _register(Option("sequence.field.sort-order", STRING, "ascending", "Or descending."))
SEQUENCE_SNAPSHOT_ORDERING = _register(Option("sequence.snapshot-ordering", BOOL, False, "Read refused when true."))
DELETION_VECTORS_ENABLED = _register(
    Option("deletion-vectors.enabled", BOOL, False, "Reads take files above level 0, less their deletion vectors.")
)
DELETION_VECTORS_MERGE_ON_READ = _register(
    Option("deletion-vectors.merge-on-read", BOOL, False, "With deletion vectors: reads also merge level-0 files.")
)

# --- record-level TTL and compaction (append tables) -------------------------------------------------------------
RECORD_LEVEL_EXPIRE_TIME = _register(
    Option(
        "record-level.expire-time",
        DURATION,
        None,
        "Rows whose `record-level.time-field` is older than now minus this are expired: never returned by reads, "
        "dropped by `expire-records` (whole files by statistics, partly expired files rewritten) and by compaction. "
        "Rows with a null time are kept.",
    )
)
RECORD_LEVEL_TIME_FIELD = _register(
    Option(
        "record-level.time-field",
        STRING,
        None,
        "The column `record-level.expire-time` judges: INT (epoch seconds), BIGINT (epoch seconds, or milliseconds "
        "when >= 10^12), TIMESTAMP (UTC wall clock), TIMESTAMP WITH LOCAL TIME ZONE, or DATE (its start, UTC).",
    )
)
RECORD_LEVEL_EXPIRE_MAX_FILES = _register(
    Option(
        "record-level.expire.max-files",
        INT,
        1000,
        "At most this many data files are dropped or rewritten by one `expire-records` run (the rest wait for the "
        "next run; oldest first).",
        minimum=1,
    )
)
RECORD_LEVEL_EXPIRE_MAX_REWRITE_SIZE = _register(
    Option(
        "record-level.expire.max-rewrite-size",
        MEMORY,
        1024**3,
        "At most this many bytes of partly expired files are rewritten by one `expire-records` run.",
        minimum=1,
    )
)
COMPACTION_MIN_FILE_NUM = _register(
    Option(
        "compaction.min.file-num",
        INT,
        5,
        "A partition/bucket is compacted only when it has at least this many small files (smaller than 70% of "
        "`target-file-size`, Paimon's rule).",
        minimum=2,
    )
)
COMPACTION_MAX_FILE_NUM = _register(
    Option(
        "compaction.max.file-num",
        INT,
        50,
        "At most this many small files are merged into one new file, even if together they stay under the target.",
        minimum=2,
    )
)
COMPACTION_COMMIT_MAX_FILES = _register(
    Option(
        "compaction.commit.max-files",
        INT,
        1000,
        "Compaction and record expiry rewrites commit in batches replacing at most this many files each (a batch "
        "that conflicts with a concurrent commit is re-planned; at most one batch of work is lost).",
        minimum=1,
    )
)
ERASE_DEADLINE = _register(
    Option(
        "erase.deadline",
        DURATION,
        30 * 86_400_000,
        "tablefmt only (not a Paimon option). How long after an `erase` the files that held the erased rows may "
        "stay on storage, kept by older snapshots (the undo window): `erase --purge` removes them at once; without "
        "it the erasure reports the time by which they must be gone (default 30 d: GDPR's one month). Tags and "
        "branches that hold erased rows are named, never removed.",
        minimum=0,
    )
)


@dataclass(frozen=True, slots=True)
class TableOptions:
    """A table's options (string map as stored in the schema) with typed, validated access."""

    raw: Mapping[str, str]

    def get(self, option: Option[T]) -> T | None:
        """The typed value of an option, or its default."""
        text = self.raw.get(option.key)
        if text is None:
            return option.default
        return option.parse(text)

    def require(self, option: Option[T]) -> T:
        """Like get(), for options that always have a value."""
        value = self.get(option)
        if value is None:
            raise ValidationError(f"option {option.key} is not set")
        return value

    def get_or(self, option: Option[T], override: T | None) -> T | None:
        """A per-run ``override`` (None = not given; already typed and range-checked as the option by the
        maintenance kernel, cleanup/kernel/parameters.py), else the table's value."""
        return self.get(option) if override is None else override

    def require_or(self, option: Option[T], override: T | None) -> T:
        """Like get_or(), for options that always have a value."""
        return self.require(option) if override is None else override

    def validate(self) -> None:
        """Parse every known option, raising a ValidationError on the first bad one."""
        check_option_values(self.raw)
        low = self.require(SNAPSHOT_NUM_RETAINED_MIN)
        high = self.require(SNAPSHOT_NUM_RETAINED_MAX)
        if high < low:
            raise ValidationError(f"snapshot.num-retained.max ({high}) must be >= snapshot.num-retained.min ({low})")


def check_option_values(options: Mapping[str, str]) -> None:
    """Parse and range-check the value of every option tablefmt interprets (a ValidationError on the first bad one:
    one line naming the option and its range); other names are not looked at."""
    for key, text in options.items():
        if key in REGISTRY:
            REGISTRY[key].parse(text)


_TYPO_CUTOFF = 0.9
"""A name that matches a Paimon pattern (``parquet.*``, ...) but is this close to a fixed name is taken as a typo."""


def _closest_known(key: str, cutoff: float) -> str | None:
    known = sorted({*REGISTRY, *PAIMON_OPTION_KEYS})
    lowered = key.lower()
    if lowered != key and lowered in known:
        return lowered
    matches = difflib.get_close_matches(lowered, known, n=1, cutoff=cutoff)
    return matches[0] if matches else None


def is_known_option_key(key: str) -> bool:
    """Whether tablefmt interprets ``key`` (the registry) or knows it as a Paimon option it stores as given."""
    if key in REGISTRY or key in PAIMON_OPTION_KEYS:
        return True
    if any(pattern.fullmatch(key) for pattern in PAIMON_OPTION_PATTERNS):
        return _closest_known(key, _TYPO_CUTOFF) is None
    return False


def check_option_keys(keys: Iterable[str], *, allow_unknown: bool = False) -> None:
    """Refuse option names neither tablefmt nor Paimon knows (UnknownOptionError suggests the closest known name):
    of options users give (Table.create, ``create --option``), never an existing table's; ``allow_unknown``: any."""
    if allow_unknown:
        return
    unknown = [key for key in keys if not is_known_option_key(key)]
    if unknown:
        raise UnknownOptionError({key: _closest_known(key, 0.6) for key in unknown})
