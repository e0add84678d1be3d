"""Resolve the declared JVM jars with Maven into this environment's jar folder, verified (`make jars`).

`lakehouse/jvm/pom.xml` declares the jars by coordinates; this runs
`mvn dependency:copy-dependencies` on it into a temporary folder beside `jars.jar_dir()`, checks that the
folder holds exactly the declared jars with the SHA-256 recorded in `lakehouse/jvm/jars.sha256`, and only
then swaps it in. Maven itself checks each download against Central's checksum (`--strict-checksums`).
A folder that already verifies is left alone, so a repeated `make jars` does not start Maven.

Why Maven and a pom rather than Spark's `spark.jars.packages`: that resolves with Ivy when a session
starts (network at run time, a cache outside the environment, and transitive jars nobody declared); a pom
is the ecosystem's own declaration, Maven resolves it once at set-up, and `-o` redoes it offline from the
local repository.

    python -m backfill_platform.devtools.jvm_jars [--offline] [--force] [--maven-arg ARG ...]
    python -m backfill_platform.devtools.jvm_jars --lock   # after changing a version in the pom
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

from backfill_platform.lakehouse import jars


class JarResolutionError(RuntimeError):
    """The declared jars could not be resolved or verified; the message says what is wrong."""


def find_mvn() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            "mvn not found on PATH; install Maven (`apt-get install maven`, or run `make setup`)"
        )
    return mvn


def resolve(
    target: Path,
    *,
    offline: bool = False,
    maven_args: Sequence[str] = (),
    pom: Path = jars.POM,
    profile: str | None = None,
) -> None:
    """Copy the jars `pom` resolves to (for Spark's pom: exactly its declared jars) into the empty folder
    `target` with Maven. `profile` defaults to this environment's Spark line for Spark's pom, none for others."""
    if profile is None and pom == jars.POM:
        # The runtime of this environment's Spark line (pyspark's major.minor).
        profile = jars.maven_profile()
    command = [
        find_mvn(),
        "--batch-mode",
        "--quiet",
        "--strict-checksums",
        *(["--offline"] if offline else []),
        "--file",
        str(pom),
        *([f"--activate-profiles={profile}"] if profile else []),
        *maven_args,
        "dependency:copy-dependencies",
        f"-DoutputDirectory={target}",
    ]
    # Maven runs with the JAVA_HOME of the caller (the Makefile selects a Java 17).
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise JarResolutionError(
            f"{' '.join(command)} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}".rstrip()
        )


def write_lock(folder: Path, lock: Path = jars.LOCK) -> None:
    """Record the SHA-256 of each declared jar in `folder` into `lock` (`sha256sum -c` can read it). The
    other Spark lines' runtimes keep their lines (run `make jars-lock` in each line's environment)."""
    hashes = jars.locked_hashes(lock) if lock.exists() else {}
    for coordinate in jars.declared_jars():
        hashes[coordinate.file_name] = jars.sha256(folder / coordinate.file_name)
    lines = [
        "# SHA-256 of the jars declared in pom.xml (every Spark line's), as Maven Central served them",
        "# (written by `make jars-lock`; `make jars` refuses a jar that differs).",
        *(f"{digest}  {name}" for name, digest in hashes.items()),
    ]
    lock.write_text("\n".join(lines) + "\n")


def install(
    output: Path, *, offline: bool = False, maven_args: Sequence[str] = (), relock: bool = False
) -> None:
    """Resolve into a temporary folder beside `output`, verify it, then replace `output` with it."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".jvm-jars-", dir=output.parent) as tmp:
        staged = Path(tmp) / "jars"
        staged.mkdir()
        resolve(staged, offline=offline, maven_args=maven_args)
        if relock:
            write_lock(staged)
        problems = jars.folder_problems(staged)
        if problems:
            raise JarResolutionError(
                f"Maven's jars do not match {jars.POM.name} and {jars.LOCK.name}: {'; '.join(problems)}"
            )
        old = Path(tmp) / "old"
        if output.exists():
            os.replace(output, old)
        os.replace(staged, output)  # same parent folder, so each rename is atomic


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.jvm_jars",
        description="Resolve the jars declared in lakehouse/jvm/pom.xml into this environment, verified.",
    )
    parser.add_argument("--force", action="store_true", help="resolve again even if the folder verifies")
    parser.add_argument("--offline", action="store_true", help="mvn --offline: only the local repository")
    parser.add_argument(
        "--lock",
        action="store_true",
        help=f"rewrite {jars.LOCK.name} from what Maven resolved (after a version change in the pom)",
    )
    parser.add_argument(
        "--maven-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for mvn, repeatable, e.g. --maven-arg=-Dmaven.repo.local=/tmp/m2",
    )
    parser.add_argument(
        "--output", type=Path, default=None, help="jar folder (default: jars.jar_dir(), in this environment)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit status."""
    args = _parse_args(argv)
    output: Path = args.output if args.output is not None else jars.jar_dir()
    if not (args.force or args.lock) and not jars.folder_problems(output):
        print(f"jvm_jars: {output} holds the declared jars, verified (--force resolves again)")
        return 0
    started = time.perf_counter()
    try:
        install(output, offline=args.offline, maven_args=args.maven_arg, relock=args.lock)
    except JarResolutionError as error:
        print(f"jvm_jars: error: {error}", file=sys.stderr)
        return 1
    names = ", ".join(str(coordinate) for coordinate in jars.declared_jars())
    print(f"jvm_jars: {output} <- {names} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
