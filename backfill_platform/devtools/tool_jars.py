"""The jars of a JVM tool the tests and `make` targets run beside the platform (Iceberg's REST catalog
server, Apache Kafka's broker): resolved by Maven from the tool's `pom.xml` at set-up (`make jars`), checked
file by file against the `jars.sha256` beside it, never fetched when the tool starts. Spark never loads them.

Each tool's package has a `classpath` module whose `main` is this module's, e.g.

    python -m backfill_platform.devtools.kafka_broker.classpath [--offline] [--force] [--lock]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from backfill_platform.devtools.jvm_jars import JarResolutionError, resolve
from backfill_platform.lakehouse import jars


def java_binary() -> str:
    """The `java` of JAVA_HOME (the Makefile selects a Java 17), else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def stop_on_sigterm() -> None:
    """A supervisor's SIGTERM leaves like Ctrl-C: through the caller's `with`, which stops the tool's JVM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def serve_in_foreground(process: subprocess.Popen, banner: Sequence[str]) -> int:
    """Print how to point the platform at a started tool, then wait for it (or for Ctrl-C)."""
    for line in banner:
        print(line)
    print("Ctrl-C stops it.", flush=True)
    try:
        return process.wait() or 0
    except KeyboardInterrupt:
        return 0


@dataclass(frozen=True)
class ToolJars:
    """One tool's locked jar set: `name` names its folder (`<name>-jars` beside Spark's jar folder)."""

    name: str
    pom: Path

    @property
    def lock(self) -> Path:
        return self.pom.with_name("jars.sha256")

    def folder(self) -> Path:
        """The tool's jars in this Python environment (not versioned)."""
        return jars.jar_dir().parent / f"{self.name}-jars"

    def problems(self, folder: Path, *, hashes: bool = True) -> list[str]:
        """What keeps `folder` from holding exactly the locked jars (empty when it does)."""
        if not folder.is_dir():
            return [f"{folder} does not exist"]
        locked = jars.locked_hashes(self.lock)
        present = {path.name for path in folder.glob("*.jar")}
        found = [f"missing {name}" for name in sorted(locked.keys() - present)]
        found += [f"not in {self.lock.name}: {name}" for name in sorted(present - locked.keys())]
        if hashes:
            found += [
                f"{name}: SHA-256 differs from {self.lock.name}"
                for name in sorted(present & locked.keys())
                if jars.sha256(folder / name) != locked[name]
            ]
        return found

    def classpath(self, folder: Path | None = None) -> str:
        """The tool's `-cp` argument; raises naming the fix when the folder is not as locked."""
        folder = folder if folder is not None else self.folder()
        found = self.problems(folder, hashes=False)
        if found:
            raise FileNotFoundError(
                f"the {self.name} jars in {folder} are not those of {self.pom} ({'; '.join(found[:5])}): "
                "run `make jars`"
            )
        return os.pathsep.join(str(folder / name) for name in sorted(jars.locked_hashes(self.lock)))

    def install(self, output: Path, *, offline: bool = False, relock: bool = False) -> None:
        """Resolve into a folder beside `output`, verify it against the lock (or rewrite the lock), swap
        it in: a failed resolution leaves the previous folder as it was."""
        output.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{self.name}-jars-", dir=output.parent) as tmp:
            staged = Path(tmp) / "jars"
            staged.mkdir()
            resolve(staged, offline=offline, pom=self.pom)
            if relock:
                lines = [
                    "# SHA-256 of every jar pom.xml resolves to (transitively), as Maven Central served them",
                    "# (written by `make jars-lock`; `make jars` refuses a set that differs).",
                    *(f"{jars.sha256(path)}  {path.name}" for path in sorted(staged.glob("*.jar"))),
                ]
                self.lock.write_text("\n".join(lines) + "\n")
            found = self.problems(staged)
            if found:
                raise JarResolutionError(f"Maven's jars do not match {self.lock}: {'; '.join(found)}")
            if output.exists():
                os.replace(output, Path(tmp) / "old")
            os.replace(staged, output)

    def main(self, prog: str, argv: Sequence[str] | None = None) -> int:
        """`make jars` (verify, resolve when needed) and `make jars-lock` (`--lock`) for this tool."""
        parser = argparse.ArgumentParser(
            prog=prog, description=f"Resolve the {self.name} jars ({self.pom}) into this environment."
        )
        parser.add_argument("--force", action="store_true", help="resolve again even if the folder verifies")
        parser.add_argument("--offline", action="store_true", help="mvn --offline: only the local repository")
        parser.add_argument(
            "--lock", action="store_true", help=f"rewrite {self.lock.name} from Maven's answer"
        )
        args = parser.parse_args(argv)
        output = self.folder()
        if not (args.force or args.lock) and not self.problems(output):
            print(f"{self.name}: {output} holds the locked jars, verified (--force resolves again)")
            return 0
        started = time.perf_counter()
        try:
            self.install(output, offline=args.offline, relock=args.lock)
        except JarResolutionError as error:
            print(f"{self.name}: error: {error}", file=sys.stderr)
            return 1
        count = len(list(output.glob("*.jar")))
        print(f"{self.name}: {output} <- {count} jars of {self.pom} ({time.perf_counter() - started:.1f} s)")
        return 0


def console_log4j2(quiet: dict[str, str]) -> str:
    """A log4j 2 configuration for a JVM tool: INFO to the console, WARN for the loggers of `quiet`
    ({key: logger name}), whose INFO lines only repeat configuration or requests."""
    lines = [
        "status = warn",
        "appender.out.type = Console",
        "appender.out.name = OUT",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.out.ref = OUT",
    ]
    for key, logger in quiet.items():
        lines += [f"logger.{key}.name = {logger}", f"logger.{key}.level = WARN"]
    return "\n".join(lines) + "\n"
