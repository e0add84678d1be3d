"""Build the local driver JVM's class-data archive (`make jars`; see `lakehouse.class_archive`).

A child process runs a small validated backfill (events, shadow, production of one day) in a throwaway data
directory and catalog, its driver JVM started with `-XX:ArchiveClassesAtExit`; the child then closes the
JVM's stdin (PySpark's signal to exit) and waits for it, since the JVM writes the archive as it exits. The
archive is moved into place only then. A stamp records the JDK, pyspark (its jars included) and the jar
lock it was built from; `make jars` rebuilds when any differs and does nothing otherwise.

    python -m backfill_platform.devtools.class_archive [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

from backfill_platform.lakehouse import class_archive, jars

# The child's backfill, and the JVM's exit after it (it writes ~150 MiB then).
BUILD_TIMEOUT_SECONDS = 900
EXIT_TIMEOUT_SECONDS = 300


class ClassArchiveError(RuntimeError):
    """The archive could not be built; the message says why."""


def stamp() -> dict[str, str]:
    """What the archive depends on: the JVM that runs Spark, pyspark's jars, the declared jars' lock and the
    build of the platform's JVM functions (its name holds the digest of their sources)."""
    # The JVM PySpark starts: JAVA_HOME's, else the `java` on PATH (links resolved, so both name one JDK).
    java_home = os.environ.get("JAVA_HOME", "")
    java = Path(java_home, "bin", "java") if java_home else Path(shutil.which("java") or "java")
    java = java.resolve()
    runtime = subprocess.run(
        [str(java), "-XshowSettings:properties", "-version"], capture_output=True, text=True, check=True
    ).stderr
    java_version = next(
        (line.split("=", 1)[1].strip() for line in runtime.splitlines() if "java.runtime.version" in line), ""
    )
    return {
        "java": f"{java} {java_version}",
        "pyspark": f"{version('pyspark')} {_pyspark_jars_digest()}",
        "jars": hashlib.sha256(jars.LOCK.read_bytes()).hexdigest(),
        "functions": jars.functions_jar().name,
    }


def _pyspark_jars_digest() -> str:
    """Names, sizes and modification times of pyspark's jars (the driver's classpath): a reinstall of the
    same version changes them, and the JVM would refuse the archive."""
    folder = jars.pyspark_jar_dir()
    listing = sorted(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in folder.glob("*.jar"))
    return hashlib.sha256("\n".join(listing).encode()).hexdigest()[:16]


def up_to_date() -> bool:
    """Whether the archive exists and its stamp is this environment's (an unreadable stamp is not)."""
    path, stamp_file = class_archive.archive_path(), class_archive.stamp_path()
    if not (path.is_file() and stamp_file.is_file()):
        return False
    try:
        return json.loads(stamp_file.read_text()) == stamp()
    except ValueError:
        return False


def build(force: bool = False) -> Path:
    """Build the archive unless an up-to-date one exists; return its path."""
    target = class_archive.archive_path()
    if not force and up_to_date():
        print(f"class archive: up to date ({target})")
        return target
    began = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="class-archive-", dir=target.parent) as work:
        written = Path(work) / class_archive.ARCHIVE_NAME
        try:
            child = subprocess.run(
                [sys.executable, "-m", "backfill_platform.devtools.class_archive", "--child", str(written)],
                env=_environment(Path(work) / "data"),
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired as error:
            raise ClassArchiveError(f"the backfill did not end in {BUILD_TIMEOUT_SECONDS} s") from error
        if child.returncode != 0:
            raise ClassArchiveError(f"the backfill failed:\n{child.stdout[-3000:]}{child.stderr[-3000:]}")
        if not written.is_file():
            raise ClassArchiveError(f"the JVM exited without writing the archive:\n{child.stderr[-3000:]}")
        os.replace(written, target)
        # The stamp last, and whole: a build cut short leaves no stamp, so the next `make jars` builds again.
        partial = Path(work) / "stamp.json"
        partial.write_text(json.dumps(stamp(), indent=2) + "\n")
        os.replace(partial, class_archive.stamp_path())
    size = target.stat().st_size / (1 << 20)
    print(f"class archive: {target} ({size:.0f} MiB) in {time.monotonic() - began:.0f} s")
    return target


def _environment(data: Path) -> dict[str, str]:
    """The child's environment: the embedded tier in `data`, whatever tier the caller's environment names
    (no catalog, warehouse, master, specs or jars of its own), so that nothing real is written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILL_PLATFORM_")}
    env["BACKFILL_PLATFORM_DATA"] = str(data)
    return env


def run_child(written: Path) -> None:
    """One day's validated backfill on a generated archive, in a JVM that archives its classes at exit;
    returns once that JVM has exited (and so written the archive)."""
    from dagster import materialize
    from pyspark import SparkContext

    from backfill_platform import settings
    from backfill_platform.components.registry import package_project, project_definitions, project_specs
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
    from backfill_platform.lakehouse.resources import (
        LOCAL_CLIENT_JIT_OPTIONS,
        SparkIcebergResource,
        catalog_from_env,
    )
    from backfill_platform.pipeline.names import events_key, production_key, shadow_key

    specs = project_specs(package_project())
    defs = project_definitions(package_project())
    stream, views = specs.streams["playback"], specs.datasets["views_per_title"]
    # The stream's first three days; the middle one is backfilled (its read window reaches into both others,
    # and it has settled: the `settled` check blocks an archive that ends inside the window).
    config = GeneratorConfig(start=stream.first_partition, days=3, events_per_day=2000, seed=11)
    generate_playback_archive(settings.data_dir() / "archive" / "playback", config)
    options = f"{LOCAL_CLIENT_JIT_OPTIONS} -XX:ArchiveClassesAtExit={written} -Xlog:cds*=off"
    # A resource of its own (Dagster builds a resource from its constructor's arguments, not from a copy).
    spark = SparkIcebergResource(
        catalog=catalog_from_env(), spark_config={"spark.driver.extraJavaOptions": options}
    )
    keys = [events_key(stream), shadow_key(views, views.active_version), production_key(views)]
    result = materialize(
        [defs.get_assets_def(key) for key in keys],
        resources={"spark": spark},
        partition_key=(stream.first_partition + timedelta(days=1)).isoformat(),
        raise_on_error=False,
    )
    if not result.success:
        raise SystemExit("the class archive's backfill failed")
    gateway = SparkContext._gateway
    if gateway is None or getattr(gateway, "proc", None) is None:
        raise SystemExit("no local Spark JVM was started")
    gateway.shutdown()
    gateway.proc.stdin.close()  # the JVM exits on its stdin's end, writing the archive
    gateway.proc.wait(timeout=EXIT_TIMEOUT_SECONDS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--force", action="store_true", help="build even when the archive is up to date")
    parser.add_argument(
        "--optional",
        action="store_true",
        help="a failure is a warning (exit 0): runs then start without the archive, only slower",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child)
        return
    try:
        build(force=args.force)
    except ClassArchiveError as error:
        if not args.optional:
            raise SystemExit(f"class archive: error: {error}") from error
        print(f"class archive: warning: not built, runs start without it (slower): {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
