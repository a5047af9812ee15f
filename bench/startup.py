"""Benchmark start-up: whole processes, as cron starts one per table, side by side with ``import deltalake``.

Times, in fresh processes, ``python -c "import deltalake"`` (the peer), ``python -c "import tableformat"``,
``tablefmt --help``, ``tablefmt snapshots T``, ``tablefmt options T`` and an idle ``tablefmt maintain --once T`` (a
table with nothing due: a first pass ran before the rounds) on a small local table the bench creates, plus
``python -c pass`` (the interpreter alone). Each round runs every command once, in turn, so that load on the machine
falls on all of them alike; the figures are the median and the minimum over ``--runs`` rounds, and their ratios to
deltalake's. The target: ``tablefmt --help`` and the idle maintain pass under 0.15 s.

Bytecode is written as an installed package has it (pip compiles at install): one warm-up run of each command
before the rounds, without PYTHONDONTWRITEBYTECODE. ``--cold`` instead reads and writes bytecode under an empty
PYTHONPYCACHEPREFIX with PYTHONDONTWRITEBYTECODE set: every module of every command (deltalake's too) is compiled
from source in every run, as in a checkout whose environment sets PYTHONDONTWRITEBYTECODE.

Usage: ``.tox/tests/bin/python bench/startup.py [--runs 20] [--cold]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from tableformat.table import Table

TARGET_S = 0.15
"""The target of ``tablefmt --help`` and of an idle ``tablefmt maintain --once``."""
TARGETED = ("tablefmt --help", "tablefmt maintain --once T (idle)")


def build(root: Path) -> str:
    """A small local table with two snapshots; returns its location."""
    table = Table.create(str(root / "t"), pa.schema([("id", pa.int64()), ("part", pa.string())]), ["part"])
    table.append(pa.table({"id": [1, 2], "part": ["a", "b"]}))
    table.append(pa.table({"id": [3], "part": ["a"]}))
    return table.location


def commands(location: str) -> dict[str, list[str]]:
    """Each timed command line, by name; deltalake's first (the peer)."""
    python = sys.executable
    found = shutil.which("tablefmt", path=str(Path(python).parent))
    if found is None:
        raise SystemExit(f"no tablefmt script next to {python}")
    tablefmt = [found]
    return {
        "import deltalake": [python, "-c", "import deltalake"],
        "python -c pass": [python, "-c", "pass"],
        "import tableformat": [python, "-c", "import tableformat"],
        "tablefmt --help": [*tablefmt, "--help"],
        "tablefmt snapshots T": [*tablefmt, "snapshots", location],
        "tablefmt options T": [*tablefmt, "options", location],
        "tablefmt maintain --once T (idle)": [*tablefmt, "maintain", "--once", location],
    }


def run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds the whole process took (start to exit); a failing command ends the bench. ``cwd`` is a scratch
    directory: ``python -c`` puts the working directory first on sys.path, and a checkout's ``tableformat/``
    there would be imported instead of the installed package."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed


def environment(cold: bool, scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if cold:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "no-bytecode")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="rounds (each runs every command once)")
    parser.add_argument("--cold", action="store_true", help="no bytecode: every module compiled in every run")
    args = parser.parse_args()
    try:
        import deltalake  # noqa: F401  (only whether it is installed)
    except ImportError:
        raise SystemExit("deltalake is not installed: run in the tests tox env (its bench extra)") from None
    with tempfile.TemporaryDirectory(prefix="tablefmt-startup-") as scratch_dir:
        scratch = Path(scratch_dir)
        location = build(scratch)
        env = environment(args.cold, scratch)
        timed = commands(location)
        run(timed["tablefmt maintain --once T (idle)"], env, scratch)  # the first pass runs what is due: later, idle
        for argv in timed.values():  # warm-up: bytecode written (not with --cold), disk caches filled
            run(argv, env, scratch)
        seconds: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(args.runs):
            for name, argv in timed.items():
                seconds[name].append(run(argv, env, scratch))
    report(seconds, args.runs, args.cold)


def report(seconds: dict[str, list[float]], runs: int, cold: bool) -> None:
    peer = seconds["import deltalake"]
    peer_median, peer_min = statistics.median(peer), min(peer)
    mode = "no bytecode (--cold)" if cold else "bytecode written"
    print(f"whole process, {runs} rounds, {mode}, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"{'command':<36} {'median':>9} {'min':>9} {'/deltalake median':>18} {'/deltalake min':>15}")
    for name, values in seconds.items():
        median, low = statistics.median(values), min(values)
        target = ""
        if name in TARGETED:
            target = f"  (target < {TARGET_S * 1000:.0f} ms: {'met' if median < TARGET_S else 'not met'})"
        print(
            f"{name:<36} {median * 1000:>7.1f}ms {low * 1000:>7.1f}ms {median / peer_median:>17.2f}x "
            f"{low / peer_min:>14.2f}x{target}"
        )


if __name__ == "__main__":
    main()
