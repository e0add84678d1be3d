"""Build the local driver JVM's class-data archive (`make jars`; see `lakehouse.class_archive`).

A child process runs a small validated backfill (events, shadow, production of one day) in a throwaway data
directory, its driver JVM started with `-XX:ArchiveClassesAtExit`; the JVM writes the classes it loaded when
it exits, and the archive is moved into place only then. A stamp records the JDK, pyspark and jars it was
built from; `make jars` rebuilds when any differs and does nothing otherwise.

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

EXIT_TIMEOUT_SECONDS = 120


def stamp() -> dict[str, str]:
    """What the archive depends on: the JVM that runs Spark, pyspark, and the jars' lock."""
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
        "pyspark": version("pyspark"),
        "jars": hashlib.sha256(jars.LOCK.read_bytes()).hexdigest(),
    }


def up_to_date() -> bool:
    path, stamp_file = class_archive.archive_path(), class_archive.stamp_path()
    return path.is_file() and stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp()


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
        env = {**os.environ, "BACKFILL_PLATFORM_DATA": str(Path(work) / "data")}
        env.pop("BACKFILL_PLATFORM_SPECS", None)
        child = subprocess.run(
            [sys.executable, "-m", "backfill_platform.devtools.class_archive", "--child", str(written)],
            env=env,
            capture_output=True,
            text=True,
        )
        if child.returncode != 0:
            raise SystemExit(
                f"class archive: the backfill failed:\n{child.stdout[-4000:]}{child.stderr[-4000:]}"
            )
        # The JVM writes the archive when it exits, after the Python process that started it.
        jvm_pid = int(child.stdout.strip().splitlines()[-1])
        deadline = time.monotonic() + EXIT_TIMEOUT_SECONDS
        while _alive(jvm_pid):
            if time.monotonic() > deadline:
                raise SystemExit(f"class archive: the JVM {jvm_pid} did not exit in {EXIT_TIMEOUT_SECONDS} s")
            time.sleep(0.2)
        if not written.is_file():
            raise SystemExit("class archive: the JVM exited without writing the archive")
        os.replace(written, target)
    class_archive.stamp_path().write_text(json.dumps(stamp(), indent=2) + "\n")
    size = target.stat().st_size / (1 << 20)
    print(f"class archive: {target} ({size:.0f} MiB) in {time.monotonic() - began:.0f} s")
    return target


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def run_child(written: Path) -> None:
    """One day's validated backfill on a generated archive, in a JVM that archives its classes at exit;
    prints the JVM's pid last."""
    from dagster import materialize

    from backfill_platform import settings
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
    from backfill_platform.lakehouse.resources import (
        LOCAL_CLIENT_JIT_OPTIONS,
        SparkIcebergResource,
        catalog_from_env,
    )
    from backfill_platform.orchestration.factory import build_definitions
    from backfill_platform.pipeline.events.assets import events_key
    from backfill_platform.pipeline.promotion.assets import production_key
    from backfill_platform.pipeline.shadow.assets import shadow_key
    from backfill_platform.specs.loader import load_specs

    defs = build_definitions()
    specs = load_specs()
    stream, views = specs.streams["playback"], specs.datasets["views_per_title"]
    # The stream's first three days; the middle one is backfilled (its read window reaches into both others,
    # and it has settled: the `settled` check blocks an archive that ends inside the window).
    config = GeneratorConfig(start=stream.first_partition, days=3, events_per_day=2000, seed=11)
    generate_playback_archive(settings.data_dir() / "archive" / "playback", config)
    options = (
        f"{LOCAL_CLIENT_JIT_OPTIONS} -XX:ArchiveClassesAtExit={written} -Xlog:cds=off -Xlog:cds+dynamic=off"
    )
    # A resource of its own (Dagster builds a resource from its constructor's arguments, not from a copy).
    spark = SparkIcebergResource(
        catalog=catalog_from_env(), spark_config={"spark.driver.extraJavaOptions": options}
    )
    keys = [events_key(stream), shadow_key(views, views.active_version), production_key(views)]
    day = (stream.first_partition + timedelta(days=1)).isoformat()
    result = materialize(
        [defs.get_assets_def(key) for key in keys],
        resources={"spark": spark},
        partition_key=day,
        raise_on_error=False,
    )
    if not result.success:
        raise SystemExit("the class archive's backfill failed")
    jvm = spark.spark_session.sparkContext._jvm
    print(int(jvm.java.lang.ProcessHandle.current().pid()), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--force", action="store_true", help="build even when the archive is up to date")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child)
    else:
        build(force=args.force)


if __name__ == "__main__":
    main()
