"""Schema changes as Paimon makes them (``ALTER TABLE ... SET / RESET``, Java ``SchemaManager.commitChanges``,
pypaimon ``SchemaManager.commit_changes``): read the latest ``schema/schema-N``, build ``schema-(N+1)`` from it
(same fields, keys and comment; changed options; a new ``timeMillis``) and create it with an atomic create-if-absent.
A writer that lost the race (another change created ``schema-(N+1)`` first) re-reads the latest schema and applies
its change again on top, so concurrent changes are never lost or merged blindly.

Option changes follow Paimon's rules: once the table has a snapshot, Paimon's immutable options (``bucket-key``,
``partition``, ``primary-key``, ``merge-engine``, ``data-file.path-directory``, ...) cannot be set or reset and
``bucket`` cannot be changed on a bucket-unaware table; ``type`` and ``path`` never. Values are validated by the
option registry (:mod:`tableformat.options`) and names that neither tablefmt nor Paimon knows are refused unless
allowed, as at create. Setting an option to the value it has, or resetting one that is not set, changes nothing
and writes no schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from tableformat.clock import resolve_now
from tableformat.data_paths import outside_root_reason
from tableformat.errors import CommitRetriesExhaustedError, ValidationError
from tableformat.model.schema import TableSchema
from tableformat.options import BUCKET, TableOptions, check_option_keys
from tableformat.store import MetadataStore

IMMUTABLE_OPTIONS = frozenset(
    {
        "bucket-key",
        "bucket-function.type",
        "data-file.path-directory",
        "merge-engine",
        "sequence.snapshot-ordering",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "rowkind.field",
        "primary-key",
        "primary-key.nullable",
        "partition",
        "dynamic-bucket.initial-buckets",
        "force-lookup",
        "row-tracking.enabled",
        "data-evolution.enabled",
        "index-file-in-data-file-dir",
        "blob-field",
        "video-frame-field",
        "blob-descriptor-field",
        "blob-view-field",
        "pk-clustering-override",
    }
)
"""Paimon's ``@Immutable`` options (Java ``CoreOptions.IMMUTABLE_OPTIONS``, pypaimon 2.1.0's copy): not changeable
once the table has a snapshot."""

NEVER_CHANGED = frozenset({"type", "path"})

MAX_ATTEMPTS = 100
"""Schema changes racing for the next id; each lost race costs one listing and one read."""


@dataclass(frozen=True, slots=True)
class SchemaChangeResult:
    """The schema a change produced, or the unchanged latest one (``changed`` False: nothing was written)."""

    schema: TableSchema
    previous: TableSchema
    changed: bool


def evolve_schema(
    store: MetadataStore, change: Callable[[TableSchema], TableSchema | None], *, now_ms: int | None = None
) -> SchemaChangeResult:
    """Apply ``change`` to the latest schema and write the result as the next schema file, retrying on a lost race.

    ``change`` gets the latest schema and returns the new content (its id and time are set here), or None when
    there is nothing to change. It is called again, on the newer schema, after each lost race.
    """
    for _ in range(MAX_ATTEMPTS):
        latest = store.latest_schema()
        proposed = change(latest)
        if proposed is None:
            return SchemaChangeResult(schema=latest, previous=latest, changed=False)
        stamp = resolve_now(now_ms)
        new = replace(proposed, id=latest.id + 1, time_millis=stamp)
        if store.write_schema_if_absent(new):
            return SchemaChangeResult(schema=new, previous=latest, changed=True)
    raise CommitRetriesExhaustedError(f"schema change lost the race for the next schema id {MAX_ATTEMPTS} times")


def _check_change(key: str, old: str | None, new: str | None, has_snapshots: bool) -> None:
    """Paimon's checkAlterTableOption / checkResetTableOption for one key."""
    if key in NEVER_CHANGED:
        raise ValidationError(f"option {key!r} cannot be changed (Paimon refuses it too)")
    if not has_snapshots:
        return
    if key in IMMUTABLE_OPTIONS:
        raise ValidationError(f"option {key!r} cannot be changed once the table has snapshots (as in Paimon)")
    if key == BUCKET.key:
        if new is None:
            raise ValidationError("option 'bucket' cannot be reset (as in Paimon)")
        old_bucket = BUCKET.parse(old) if old is not None else BUCKET.default
        if old_bucket == -1 or BUCKET.parse(new) == -1:
            raise ValidationError("option 'bucket' cannot be changed from or to -1 (as in Paimon)")


def alter_options(
    store: MetadataStore,
    set_options: Mapping[str, str] | None = None,
    unset: Iterable[str] = (),
    *,
    allow_unknown: bool = False,
    now_ms: int | None = None,
) -> SchemaChangeResult:
    """Set and reset table options in one new schema version (``ALTER TABLE t SET (...)`` / ``RESET (...)``)."""
    wanted = {str(k): str(v) for k, v in (set_options or {}).items()}
    removed = [str(k) for k in unset]
    both = sorted(set(wanted) & set(removed))
    if both:
        raise ValidationError(f"option(s) {both} are both set and unset")
    if not wanted and not removed:
        raise ValidationError("no option to set or unset")
    check_option_keys(wanted, allow_unknown=allow_unknown)
    has_snapshots = store.latest_snapshot_id() is not None

    def change(latest: TableSchema) -> TableSchema | None:
        options = dict(latest.options)
        for key, value in wanted.items():
            if options.get(key) != value:
                _check_change(key, options.get(key), value, has_snapshots)
                options[key] = value
        for key in removed:
            _check_change(key, options.get(key), None, has_snapshots)  # as Paimon: checked even when not set
            options.pop(key, None)
        if options == dict(latest.options):
            return None
        table_options = TableOptions(options)
        table_options.validate()
        outside = outside_root_reason(table_options)
        if outside is not None:
            raise ValidationError(f"{outside}; tablefmt keeps a table's files inside its root")
        return replace(latest, options=options)

    return evolve_schema(store, change, now_ms=now_ms)
