"""Compile the platform's JVM functions into this environment's jar (`make jars`).

The sources are `lakehouse/jvm/functions/*.java`; they compile with the JDK's `javac` against the jars of
this environment's pyspark (Spark's API and the Jackson it ships), so each Spark line gets a build of its
own, and nothing is downloaded. The jar's name carries a digest of the sources and the pyspark version
(`jars.functions_jar()`): an existing jar of that name is up to date and left alone, and the builds of
other sources or pysparks in the folder are removed.

    python -m backfill_platform.devtools.jvm_functions [--force]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from backfill_platform.lakehouse import class_archive, jars


class FunctionsBuildError(RuntimeError):
    """The JVM functions could not be compiled; the message says why."""


def _jdk_tool(name: str) -> str:
    """`javac` or `jar` of JAVA_HOME's JDK (the Makefile's Java 17), else the one on PATH."""
    home = os.environ.get("JAVA_HOME", "")
    candidate = Path(home, "bin", name)
    if home and candidate.is_file():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise FunctionsBuildError(
            f"`{name}` not found (JAVA_HOME={home or 'unset'}): the JVM functions need a JDK; install "
            "openjdk-17-jdk-headless (`make setup` does)"
        )
    return found


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise FunctionsBuildError(
            f"{' '.join(command)} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}".rstrip()
        )


def build(target: Path) -> None:
    """Compile every source into the jar `target`, written beside it first and then renamed into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".jvm-functions-", dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        classpath = f"{jars.pyspark_jar_dir()}/*"
        sources = [str(source) for source in jars.functions_sources()]
        # Class files for the Java the Makefile selects (17), whichever JDK compiles them.
        _run(
            [
                _jdk_tool("javac"),
                *jars.FUNCTIONS_JAVAC_OPTIONS,
                "-cp",
                classpath,
                "-d",
                str(classes),
                *sources,
            ]
        )
        staged = Path(tmp) / target.name
        _run([_jdk_tool("jar"), "--create", "--file", str(staged), "-C", str(classes), "."])
        os.replace(staged, target)


def remove_stale(keep: Path) -> list[Path]:
    """Delete the builds of other sources or pysparks beside `keep`; returns them."""
    stale = [jar for jar in keep.parent.glob("backfill-platform-functions-*.jar") if jar != keep]
    for jar in stale:
        jar.unlink()
    return stale


def _forget_class_archive() -> None:
    """Delete the driver's class-data archive: it was built with the previous functions jar on the classpath
    (its stamp names that build), so it is stale now. Sessions run without it until `make jars` builds it
    again (`devtools.class_archive`)."""
    for path in (class_archive.archive_path(), class_archive.stamp_path()):
        path.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.jvm_functions",
        description="Compile lakehouse/jvm/functions/*.java against this environment's pyspark.",
    )
    parser.add_argument("--force", action="store_true", help="compile again even if the jar is up to date")
    args = parser.parse_args(argv)
    target = jars.functions_jar()
    if target.is_file() and not args.force:
        print(f"jvm_functions: {target} is up to date (--force compiles again)")
        return 0
    started = time.perf_counter()
    try:
        build(target)
    except FunctionsBuildError as error:
        print(f"jvm_functions: error: {error}", file=sys.stderr)
        return 1
    removed = remove_stale(target)
    _forget_class_archive()
    print(
        f"jvm_functions: {target} <- {len(jars.functions_sources())} source(s) "
        f"({time.perf_counter() - started:.1f} s{f'; {len(removed)} stale build(s) removed' if removed else ''})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
