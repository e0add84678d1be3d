"""Repair the incomplete Iceberg runtime jar by building its missing relocated Jackson classes.

The `iceberg-spark-runtime-3.5_2.12` jar in the `snowpark-connect-deps-iceberg` wheel references
`org.apache.iceberg.shaded.com.fasterxml.jackson.*` classes that it does not contain. The Jackson 2.15.2
jars that pyspark already ships in `pyspark/jars/` are merged into one jar and relocated with jarjar,
which yields exactly those classes. The result is written to `jars.relocated_jackson_jar()` (inside the
Python environment) and put on `spark.jars` beside the runtime jar.

Run once at install time (`make setup` does)::

    python -m backfill_platform.devtools.jar_repair [--force]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from backfill_platform.lakehouse import jars

JACKSON_VERSION = "2.15.2"
JACKSON_ARTIFACTS = (
    "jackson-core",
    "jackson-databind",
    "jackson-annotations",
    "jackson-datatype-jsr310",
)
DEFAULT_JARJAR = Path("/usr/share/java/jarjar.jar")
JARJAR_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
# A class that the runtime jar needs first (its absence is the symptom on the first CREATE TABLE).
PROBE_CLASS = "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class"


class JarRepairError(RuntimeError):
    """The relocated Jackson jar could not be built; the message says what is missing."""


def pyspark_jar_dir() -> Path:
    """The `jars/` folder of the installed pyspark distribution."""
    import pyspark  # imported lazily: importing pyspark is slow and only needed to locate its jars

    return Path(next(iter(pyspark.__path__))) / "jars"


def jackson_jars(jar_dir: Path | None = None) -> list[Path]:
    """The Jackson jars to merge, in merge order; raises `JarRepairError` if one is missing."""
    folder = jar_dir if jar_dir is not None else pyspark_jar_dir()
    found = [folder / f"{artifact}-{JACKSON_VERSION}.jar" for artifact in JACKSON_ARTIFACTS]
    missing = [path.name for path in found if not path.is_file()]
    if missing:
        raise JarRepairError(
            f"pyspark's jar folder {folder} lacks {', '.join(missing)}; "
            "is pyspark 3.5.9 installed in this environment? (run `make setup`)"
        )
    return found


def _keep_entry(name: str) -> bool:
    """Whether a zip entry of a Jackson jar belongs in the merged jar.

    Multi-release class variants, module descriptors and manifests are dropped: the relocated classes
    live in the Iceberg namespace, where the Java 9+ variants and module metadata would be wrong.
    """
    if name.startswith("META-INF/versions/"):
        return False
    if name == "module-info.class" or name.endswith("/module-info.class"):
        return False
    return name.upper() != "META-INF/MANIFEST.MF"


def merge_jars(sources: Sequence[Path], target: Path) -> int:
    """Merge `sources` into the new jar `target` (first occurrence of an entry wins).

    Returns the number of entries written.
    """
    seen: set[str] = set()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for source in sources:
            with zipfile.ZipFile(source) as jar:
                for info in jar.infolist():
                    if info.filename in seen or not _keep_entry(info.filename):
                        continue
                    seen.add(info.filename)
                    # A fresh ZipInfo drops the source's extra fields and flag bits.
                    entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                    entry.external_attr = info.external_attr
                    out.writestr(entry, jar.read(info), compress_type=zipfile.ZIP_DEFLATED)
    return len(seen)


def find_java() -> str:
    """Path of the `java` executable (`$JAVA_HOME/bin/java` first, then `PATH`)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    java = shutil.which("java")
    if java is None:
        raise JarRepairError(
            "java not found (neither $JAVA_HOME/bin/java nor on PATH); "
            "install a JRE 17, e.g. `apt-get install openjdk-17-jre-headless` (or run `make setup`)"
        )
    return java


def relocate(java: str, jarjar: Path, source: Path, target: Path) -> None:
    """Relocate `com.fasterxml.jackson` in `source` into Iceberg's shaded namespace, writing `target`."""
    if not jarjar.is_file():
        raise JarRepairError(
            f"jarjar not found at {jarjar}; install it with `apt-get install libjarjar-java` "
            "(or run `make setup`), or pass --jarjar PATH"
        )
    rules = target.with_name(target.name + ".rules")
    rules.write_text(JARJAR_RULE)
    try:
        result = subprocess.run(
            [java, "-jar", str(jarjar), "process", str(rules), str(source), str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        rules.unlink(missing_ok=True)
    if result.returncode != 0 or not target.is_file():
        raise JarRepairError(
            f"jarjar failed (exit {result.returncode}):\n{result.stdout}{result.stderr}".rstrip()
        )


def verify(jar: Path) -> None:
    """Check that `jar` holds the relocated classes and no unrelocated Jackson class."""
    with zipfile.ZipFile(jar) as built:
        names = built.namelist()
    if PROBE_CLASS not in names:
        raise JarRepairError(f"{jar} lacks {PROBE_CLASS}: relocation did not happen")
    leftovers = [name for name in names if name.startswith("com/fasterxml/jackson/")]
    if leftovers:
        raise JarRepairError(f"{jar} still holds {len(leftovers)} unrelocated entries, e.g. {leftovers[0]}")


def build(output: Path, *, jarjar: Path = DEFAULT_JARJAR, jar_dir: Path | None = None) -> Path:
    """Build the relocated Jackson jar at `output`, atomically (temporary file, then rename)."""
    sources = jackson_jars(jar_dir)
    java = find_java()
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".jar-repair-", dir=output.parent) as tmp:
        merged = Path(tmp) / "jackson-merged.jar"
        relocated = Path(tmp) / output.name
        merge_jars(sources, merged)
        relocate(java, jarjar, merged, relocated)
        verify(relocated)
        relocated.chmod(0o644)
        os.replace(relocated, output)  # same folder, so the rename is atomic
    return output


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.jar_repair",
        description="Build the relocated Jackson jar that the bundled Iceberg runtime jar lacks.",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if the jar already exists")
    parser.add_argument(
        "--jarjar",
        type=Path,
        default=Path(os.environ.get("JARJAR_JAR", DEFAULT_JARJAR)),
        help=f"path of jarjar.jar (default: $JARJAR_JAR or {DEFAULT_JARJAR})",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the jar (default: jars.relocated_jackson_jar(), inside this environment)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit status."""
    args = _parse_args(argv)
    output: Path = args.output if args.output is not None else jars.relocated_jackson_jar()
    if output.exists() and not args.force:
        print(f"jar_repair: {output} exists, nothing to do (--force rebuilds)")
        return 0
    started = time.perf_counter()
    try:
        build(output, jarjar=args.jarjar)
    except JarRepairError as error:
        print(f"jar_repair: error: {error}", file=sys.stderr)
        return 1
    print(f"jar_repair: built {output} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
