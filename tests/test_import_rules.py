"""The layer rules of docs/architecture.md, checked on the source: every import goes down, never up or sideways.

model <- codec <- io <- store / commit / scan <- cleanup <- table <- spark / cli. Modules are read as text (ast),
so the rule holds for imports inside functions too. Also: commit never imports scan, and JSON or Avro
(de)serialisation (json, fastavro) appears only in codec/ (the CLI prints --json, Spark parses its own options:
both are output and configuration, not table metadata, and are the only exceptions).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = {
    "tableformat": REPO / "tableformat",
    "tableformat.cleanup": REPO / "cleanup",
    "tableformat.cli": REPO / "cli",
}

LAYERS: list[tuple[str, ...]] = [
    ("tableformat.errors",),
    (
        "tableformat.durations",
        "tableformat.units",
        "tableformat.clock",
        "tableformat.threads",
        "tableformat.paimon_option_keys",
        "tableformat.gc_pause",
        "tableformat.lazy_module",
    ),
    ("tableformat.model", "tableformat.layout", "tableformat.option_types", "tableformat.arrow_columns"),
    ("tableformat.options",),
    ("tableformat.codec", "tableformat.data_paths"),
    ("tableformat.io",),
    (
        "tableformat.store",
        "tableformat.index_store",
        "tableformat.audit_store",
        "tableformat.undo_store",
        "tableformat.erasure_store",
        "tableformat.changelog_store",
        "tableformat.parallel",
        "tableformat.options_doc",
        "tableformat.pricing",
    ),
    ("tableformat.live_set", "tableformat.context", "tableformat.claims", "tableformat.audit"),
    ("tableformat.commit", "tableformat.scan"),
    ("tableformat.cleanup",),
    ("tableformat.maintenance", "tableformat.readers", "tableformat.inspect", "tableformat.report"),
    ("tableformat.table",),
    ("tableformat.spark", "tableformat.cli", "tableformat"),
]
"""Lowest first. A module may import its own layer's siblings only where listed in SIDEWAYS."""

SIDEWAYS = {
    ("tableformat.cli", "tableformat.spark"),
    ("tableformat.data_paths", "tableformat.codec"),
    ("tableformat.store", "tableformat.index_store"),
    ("tableformat.store", "tableformat.changelog_store"),
    ("tableformat.store", "tableformat.audit_store"),
    ("tableformat.store", "tableformat.undo_store"),
    ("tableformat.store", "tableformat.erasure_store"),
    ("tableformat.claims", "tableformat.audit"),
    ("tableformat.report", "tableformat.inspect"),
}
"""Same-layer imports that are allowed (importer, imported)."""

FORBIDDEN = {("tableformat.commit", "tableformat.scan")}

METADATA_CODECS = (
    "tableformat.codec.json_codec",
    "tableformat.codec.avro_codec",
    "tableformat.codec.index_manifest_codec",
    "tableformat.codec.deletion_vector_codec",
)
METADATA_CODEC_USERS = (
    "tableformat.codec",
    "tableformat.store",
    "tableformat.undo_store",
    "tableformat.index_store",
    "tableformat.changelog_store",
    "tableformat.commit.committer",
)
"""The store (with its mixins for index files and long-lived changelogs) alone turns metadata files into models;
the committer also encodes its commit log into a snapshot property (a value, not a file)."""

SERIALISERS = ("json", "fastavro", "avro")
SERIALISER_HOMES = ("tableformat.codec", "tableformat.cli", "tableformat.spark")


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if package == "tableformat" and parts and parts[0] in ("cleanup", "cli"):
                continue
            found[name] = path
    return found


def unit_of(module: str) -> str:
    """The layer unit a module belongs to: the longest LAYERS entry it falls under."""
    best = ""
    for layer in LAYERS:
        for unit in layer:
            if (module == unit or module.startswith(unit + ".")) and len(unit) > len(best):
                best = unit
    return best


def level(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def imports_of(module: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                names.append(".".join([*base, node.module] if node.module else base))
            elif node.module:
                names.append(node.module)
                names += [f"{node.module}.{alias.name}" for alias in node.names]  # a submodule imported by name
    return names


def violations() -> list[str]:
    found = []
    for module, path in sorted(modules().items()):
        unit = unit_of(module)
        assert unit, f"{module} is in no layer: add it to LAYERS"
        for imported in imports_of(module, path):
            top = imported.split(".")[0]
            if top in SERIALISERS and not any(unit == home or unit.startswith(home) for home in SERIALISER_HOMES):
                found.append(f"{module} imports {imported}: (de)serialisation belongs in tableformat.codec")
            if top != "tableformat":
                continue
            if imported in METADATA_CODECS and not any(
                module == user or module.startswith(user + ".") for user in METADATA_CODEC_USERS
            ):
                found.append(f"{module} imports {imported}: only the store reads and writes metadata")
            target = unit_of(imported)
            if not target or target == unit:
                continue
            if (unit, target) in FORBIDDEN:
                found.append(f"{module} imports {imported}: {unit} must not import {target}")
            elif level(target) > level(unit):
                found.append(f"{module} imports {imported}: {unit} is below {target}")
            elif level(target) == level(unit) and (unit, target) not in SIDEWAYS and unit != "tableformat":
                found.append(f"{module} imports {imported}: sideways between {unit} and {target}")
    return found


def test_every_import_goes_down() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("tableformat.model.x", "from tableformat.store import MetadataStore\n", "tableformat.model is below"),
        ("tableformat.commit.x", "from tableformat.scan.reader import DataReader\n", "must not import"),
        ("tableformat.store", "import json\n", "belongs in tableformat.codec"),
        ("tableformat.cleanup.x", "from tableformat.cli.main import cli\n", "is below"),
        ("tableformat.cleanup.x", "from tableformat.codec import json_codec\n", "only the store"),
    ],
)
def test_the_rule_catches_a_wrong_import(tmp_path: Path, monkeypatch, module: str, source: str, expected: str) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(source)
    real = modules
    monkeypatch.setitem(globals(), "modules", lambda: {**real(), module: bad})
    assert any(expected in v for v in violations())


ORACLE = REPO / "tests" / "support" / "tables.py"
"""The independent reachability oracle every maintenance suite checks cleanup against."""


def test_the_test_oracle_does_not_use_what_it_checks() -> None:
    """tests/support/tables.py may use the scan side (store, live set, reader), nothing at or above
    tableformat.cleanup (the maintenance facade, Table, the top-level package that re-exports them): an oracle that
    shares cleanup's code cannot catch cleanup's mistakes."""
    imported = [m for m in imports_of("support.tables", ORACLE) if m.split(".")[0] == "tableformat"]
    assert "tableformat.live_set" in imported and "tableformat.scan.reader" in imported
    cleanup = level("tableformat.cleanup")
    assert [m for m in imported if level(unit_of(m)) >= cleanup] == []


CLOCK_HOME = "tableformat.clock"
"""The one module that reads the system time (epoch time and Paimon's local wall clock)."""


def _reads_system_time(node: ast.AST) -> bool:
    """``time.time()``, ``time.time_ns()`` (however ``time`` is imported, ``from time import time`` too)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id == "time" and func.attr in ("time", "time_ns")
    return isinstance(func, ast.Name) and func.id in ("time_ns",)


def test_one_clock() -> None:
    readers = sorted(
        module
        for module, path in modules().items()
        if module != CLOCK_HOME and any(map(_reads_system_time, ast.walk(ast.parse(path.read_text(), str(path)))))
    )
    assert readers == [], f"only {CLOCK_HOME} reads the system time; these do too: {readers}"


POOL_HOME = "tableformat.threads"
"""The one module that builds thread pools."""


def test_one_thread_pool_module() -> None:
    def builds_pool(node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name == "ThreadPoolExecutor"

    builders = sorted(
        module
        for module, path in modules().items()
        if module != POOL_HOME and any(map(builds_pool, ast.walk(ast.parse(path.read_text(), str(path)))))
    )
    assert builders == [], f"only {POOL_HOME} builds thread pools; these do too: {builders}"


CONTEXT_HOME = "tableformat.context"
"""Where a TableContext is made: ``load``, ``of`` and the ``with_io``, ``with_store``, ``with_options`` derivations."""


def test_one_way_to_derive_a_table_context() -> None:
    def builds_context(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "TableContext"

    builders = sorted(
        module
        for module, path in modules().items()
        if module != CONTEXT_HOME and any(map(builds_context, ast.walk(ast.parse(path.read_text(), str(path)))))
    )
    assert builders == [], f"contexts are made in {CONTEXT_HOME} only (of, with_io, ...); also in: {builders}"


CLEANUP_LAYERS: list[tuple[str, ...]] = [
    ("kernel", "roots"),
    ("rewrite",),
    ("compaction", "orphans", "partitions", "records", "snapshots"),
    ("erase", "undo"),
    ("check_references",),
    ("registry", "check"),
    ("after_commit", "maintainer"),
]
"""Inside tableformat.cleanup: the kernel and the roots every operation reads, the shared rewriter, the operation
packages (which never import each other), erasure (a rewrite followed by a snapshot expiration) and undo (which
reads what they left), the registry of
operations and check, then what runs them."""


def _cleanup_unit(module: str) -> str | None:
    prefix = "tableformat.cleanup."
    if not module.startswith(prefix):
        return None
    return module[len(prefix) :].split(".")[0]


def test_cleanup_packages_import_down_only() -> None:
    level_of = {unit: i for i, layer in enumerate(CLEANUP_LAYERS) for unit in layer}
    found = []
    for module, path in sorted(modules().items()):
        unit = _cleanup_unit(module)
        if unit is None:
            continue
        assert unit in level_of, f"{module}: add {unit} to CLEANUP_LAYERS"
        for imported in imports_of(module, path):
            target = _cleanup_unit(imported)
            if target is None or target == unit or target not in level_of:
                continue
            if level_of[target] >= level_of[unit]:
                found.append(f"{module} imports {imported}: {unit} must not import {target}")
    assert found == []


DISCARD_HOME = "tableformat.commit.uncommitted"
"""The one place files no snapshot references are discarded after a write or commit attempt."""


def test_one_way_to_discard_uncommitted_files() -> None:
    def discards(node: ast.AST) -> bool:
        if not isinstance(node, ast.FunctionDef):
            return False
        name = node.name.lower()
        return any(word in name for word in ("discard", "unreferenced", "remove_files", "_remove")) and any(
            isinstance(n, ast.Attribute) and n.attr == "delete_files" for n in ast.walk(node)
        )

    found = sorted(
        f"{module}.{node.name}"
        for module, path in modules().items()
        if module != DISCARD_HOME
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if discards(node)
    )
    assert found == [], f"uncommitted files are discarded through {DISCARD_HOME} only; also in: {found}"
