"""The REST catalog server's jars: resolved by Maven from `pom.xml` beside this module at set-up (`make jars`),
checked file by file against `jars.sha256`, never fetched when a server starts.

    python -m backfill_platform.devtools.rest_catalog.classpath [--offline] [--force] [--lock]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from backfill_platform.devtools.jvm_jars import JarResolutionError, resolve
from backfill_platform.lakehouse import jars

POM = Path(__file__).resolve().parent / "pom.xml"
LOCK = POM.with_name("jars.sha256")
MAIN_CLASS = "org.apache.iceberg.rest.RESTCatalogServer"


def jar_folder() -> Path:
    """The server's jars in this Python environment (beside Spark's jar folder; not versioned)."""
    return jars.jar_dir().parent / "rest-catalog-jars"


def problems(folder: Path, *, hashes: bool = True) -> list[str]:
    """What keeps `folder` from holding exactly the locked jars (empty when it does)."""
    if not folder.is_dir():
        return [f"{folder} does not exist"]
    locked = jars.locked_hashes(LOCK)
    present = {path.name for path in folder.glob("*.jar")}
    found = [f"missing {name}" for name in sorted(locked.keys() - present)]
    found += [f"not in {LOCK.name}: {name}" for name in sorted(present - locked.keys())]
    if hashes:
        found += [
            f"{name}: SHA-256 differs from {LOCK.name}"
            for name in sorted(present & locked.keys())
            if jars.sha256(folder / name) != locked[name]
        ]
    return found


def classpath(folder: Path | None = None) -> str:
    """The server's `-cp` argument; raises naming the fix when the folder is not as locked."""
    folder = folder if folder is not None else jar_folder()
    found = problems(folder, hashes=False)
    if found:
        raise FileNotFoundError(
            f"the REST catalog server's jars in {folder} are not those of {POM} ({'; '.join(found[:5])}): "
            "run `make jars`"
        )
    return os.pathsep.join(str(folder / name) for name in sorted(jars.locked_hashes(LOCK)))


def install(output: Path, *, offline: bool = False, relock: bool = False) -> None:
    """Resolve into a folder beside `output`, verify it against the lock (or rewrite the lock), swap it in."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".rest-catalog-jars-", dir=output.parent) as tmp:
        staged = Path(tmp) / "jars"
        staged.mkdir()
        resolve(staged, offline=offline, pom=POM)
        if relock:
            lines = [
                "# SHA-256 of every jar pom.xml resolves to (transitively), as Maven Central served them",
                "# (written by `make jars-lock`; `make jars` refuses a set that differs).",
                *(f"{jars.sha256(path)}  {path.name}" for path in sorted(staged.glob("*.jar"))),
            ]
            LOCK.write_text("\n".join(lines) + "\n")
        found = problems(staged)
        if found:
            raise JarResolutionError(f"Maven's jars do not match {LOCK}: {'; '.join(found)}")
        if output.exists():
            os.replace(output, Path(tmp) / "old")
        os.replace(staged, output)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.rest_catalog.classpath",
        description="Resolve the REST catalog server's jars (rest_catalog/pom.xml) into this environment.",
    )
    parser.add_argument("--force", action="store_true", help="resolve again even if the folder verifies")
    parser.add_argument("--offline", action="store_true", help="mvn --offline: only the local repository")
    parser.add_argument("--lock", action="store_true", help=f"rewrite {LOCK.name} from what Maven resolved")
    args = parser.parse_args(argv)
    output = jar_folder()
    if not (args.force or args.lock) and not problems(output):
        print(f"rest_catalog: {output} holds the locked jars, verified (--force resolves again)")
        return 0
    started = time.perf_counter()
    try:
        install(output, offline=args.offline, relock=args.lock)
    except JarResolutionError as error:
        print(f"rest_catalog: error: {error}", file=sys.stderr)
        return 1
    count = len(list(output.glob("*.jar")))
    print(f"rest_catalog: {output} <- {count} jars of {POM.name} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
