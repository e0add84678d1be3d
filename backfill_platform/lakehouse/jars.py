"""The jars Spark is given: declared by Maven coordinates, resolved once at set-up, never at run time.

`jvm/pom.xml` (beside this module) declares every JVM dependency once, with a pinned version: the Iceberg
Spark runtime, Iceberg's AWS bundle (S3FileIO) and the JDBC drivers of the catalog databases (SQLite for
the embedded tier, PostgreSQL for the team tier). The runtime is the one of the environment's Spark line
(pyspark 3.5 or 4.1: one Maven profile each), so an environment holds the jars of the Spark it runs.
`make jars` (`backfill_platform.devtools.jvm_jars`) copies exactly those jars from Maven into `jar_dir()`, a folder of the Python environment, and checks
them against `jvm/jars.sha256`; every process of that environment then finds them without configuration.
Starting Spark only lists that folder: nothing is downloaded at import or at run time.

A cluster that provides its own jars names them in `BACKFILL_PLATFORM_ICEBERG_JARS`; the catalog's JDBC
driver is added to such a list when the list names none and the environment has the declared one.

Beside them, the platform's own JVM functions (`jvm/functions/*.java`, e.g. the events' strict parse):
compiled at set-up against this environment's pyspark (`devtools.jvm_functions`), into a jar whose name
carries the digest of the sources and of that pyspark, so a jar built from other sources or for another
Spark is never used. Every session gets it, a cluster's own jar list too (`spark.jars` ships it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parent / "jvm"
POM = JVM_DIR / "pom.xml"
LOCK = JVM_DIR / "jars.sha256"
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# JDBC URI prefix -> the declared driver's group:artifact.
JDBC_DRIVERS = {
    "jdbc:sqlite:": "org.xerial:sqlite-jdbc",
    "jdbc:postgresql:": "org.postgresql:postgresql",
}


@dataclass(frozen=True, order=True)
class Coordinate:
    """One declared jar: Maven's group:artifact:version."""

    group: str
    artifact: str
    version: str

    @property
    def key(self) -> str:
        return f"{self.group}:{self.artifact}"

    @property
    def file_name(self) -> str:
        """The name `mvn dependency:copy-dependencies` gives the jar."""
        return f"{self.artifact}-{self.version}.jar"

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


def spark_line() -> str:
    """The Spark line (major.minor) of this environment's pyspark, read from its installed metadata
    (pyspark is not imported): the jars must be those of the Spark that runs."""
    version = importlib.metadata.version("pyspark")
    return ".".join(version.split(".")[:2])


def spark_lines(pom: Path = POM) -> tuple[str, ...]:
    """The Spark lines `pom` declares a profile for (`spark-<line>`)."""
    root = ET.parse(pom).getroot()
    ids = (element.text or "" for element in root.findall("m:profiles/m:profile/m:id", _POM_NS))
    return tuple(name.removeprefix("spark-") for name in ids if name.startswith("spark-"))


def maven_profile(line: str | None = None, pom: Path = POM) -> str:
    """The pom's profile for `line` (default: this environment's); refuses a line the pom does not declare."""
    line = line or spark_line()
    if line not in spark_lines(pom):
        raise ValueError(
            f"pyspark {line} has no Iceberg runtime declared in {pom} (Spark lines declared: "
            f"{', '.join(spark_lines(pom))}): install a declared line, e.g. `make setup` (3.5) or "
            "`make test-other-spark` (4.1)"
        )
    return f"spark-{line}"


def declared_jars(pom: Path = POM, line: str | None = None) -> tuple[Coordinate, ...]:
    """The coordinates `pom` declares for a Spark line (default: this environment's), in its order, with
    `${property}` versions and names resolved from the pom's properties and the line's profile."""
    root = ET.parse(pom).getroot()
    profile = maven_profile(line, pom)
    properties = {
        element.tag.split("}", 1)[-1]: (element.text or "").strip()
        for element in [
            *root.findall("m:properties/*", _POM_NS),
            *root.findall(f"m:profiles/m:profile[m:id='{profile}']/m:properties/*", _POM_NS),
        ]
    }

    def text(element: ET.Element, tag: str) -> str:
        value = (element.findtext(f"m:{tag}", default="", namespaces=_POM_NS) or "").strip()
        resolved = re.sub(
            r"\$\{([^}]+)\}", lambda match: properties.get(match.group(1), match.group(0)), value
        )
        if not resolved or "${" in resolved:
            raise ValueError(f"{pom}: a dependency has no usable <{tag}> ({value!r})")
        return resolved

    return tuple(
        Coordinate(text(dep, "groupId"), text(dep, "artifactId"), text(dep, "version"))
        for dep in root.findall("m:dependencies/m:dependency", _POM_NS)
    )


def locked_hashes(lock: Path = LOCK) -> dict[str, str]:
    """File name -> SHA-256 of each declared jar, as recorded in `lock` (`sha256sum` format)."""
    hashes: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            hashes[name.lstrip("*").strip()] = digest.lower()
    return hashes


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pyspark_jar_dir() -> Path:
    """The jars pyspark ships (Spark itself, the driver's classpath), in this environment."""
    import pyspark  # here, not at import: this module is read before any session exists

    return Path(pyspark.__file__).parent / "jars"


def jar_dir() -> Path:
    """Folder of the declared jars for this Python environment (filled by `make jars`, not versioned)."""
    return Path(sys.prefix) / "share" / "backfill_platform" / "jars"


def folder_problems(folder: Path, *, hashes: bool = True) -> list[str]:
    """What keeps `folder` from holding exactly the declared jars (empty when it does). With `hashes`, each
    jar's SHA-256 is also compared with the lock file; without, only the file set (cheap, at run time)."""
    if not folder.is_dir():
        return [f"{folder} does not exist"]
    expected = {coordinate.file_name for coordinate in declared_jars()}
    present = {path.name for path in folder.glob("*.jar")}
    problems = [f"missing {name}" for name in sorted(expected - present)]
    problems += [f"not declared: {name}" for name in sorted(present - expected)]
    if hashes:
        locked = locked_hashes()
        problems += [f"not in {LOCK.name}: {name}" for name in sorted(expected - locked.keys())]
        problems += [
            f"{name}: SHA-256 differs from {LOCK.name}"
            for name in sorted(expected & present & locked.keys())
            if sha256(folder / name) != locked[name]
        ]
    return problems


FUNCTIONS_DIR = JVM_DIR / "functions"
# How `devtools.jvm_functions` compiles them (part of the jar's digest: another recipe, another jar).
FUNCTIONS_JAVA_RELEASE = "17"
FUNCTIONS_JAVAC_OPTIONS = ("--release", FUNCTIONS_JAVA_RELEASE, "-Xlint:all,-path", "-Werror")


def functions_sources() -> list[Path]:
    """The Java sources of the platform's JVM functions."""
    return sorted(FUNCTIONS_DIR.glob("*.java"))


def functions_jar() -> Path:
    """Where this environment's build of the JVM functions is: its name holds a digest of the sources and
    of the pyspark they compile against (`devtools.jvm_functions` builds it; nothing at run time does)."""
    digest = hashlib.sha256(importlib.metadata.version("pyspark").encode())
    digest.update(" ".join(FUNCTIONS_JAVAC_OPTIONS).encode())
    for source in functions_sources():
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return jar_dir().parent / f"backfill-platform-functions-{digest.hexdigest()[:16]}.jar"


def required_functions_jar() -> str:
    """`functions_jar()`, or an error saying how to build it when it is absent."""
    jar = functions_jar()
    if not jar.is_file():
        raise FileNotFoundError(
            f"the platform's JVM functions are not built for these sources and this pyspark ({jar} is "
            "missing): run `make jars` (or `make setup`); where the package is installed without its "
            "repository, `python -m backfill_platform.devtools.jvm_functions` with a JDK 17"
        )
    return str(jar)


def default_jars(folder: Path | None = None) -> list[str]:
    """The declared jars, as paths in `folder` (default `jar_dir()`), in the pom's order. Raises when the
    folder does not hold exactly them, saying how to fix it."""
    folder = folder if folder is not None else jar_dir()
    problems = folder_problems(folder, hashes=False)
    if problems:
        raise FileNotFoundError(
            f"the jar folder {folder} does not hold exactly the jars of {POM} ({'; '.join(problems)}): "
            "run `make jars` (or `make setup`), or set BACKFILL_PLATFORM_ICEBERG_JARS to jars a cluster provides"
        )
    return [str(folder / coordinate.file_name) for coordinate in declared_jars()]


def jdbc_driver_jar(jdbc_uri: str, folder: Path | None = None) -> Path | None:
    """The declared JDBC driver jar for a catalog URI, if this environment has it (None for a database
    this module does not know, or when `make jars` has not run)."""
    for prefix, key in JDBC_DRIVERS.items():
        if jdbc_uri.startswith(prefix):
            coordinate = next(c for c in declared_jars() if c.key == key)
            jar = (folder if folder is not None else jar_dir()) / coordinate.file_name
            return jar if jar.is_file() else None
    return None


def with_jdbc_driver(jars: list[str], jdbc_uri: str, folder: Path | None = None) -> list[str]:
    """A jar list named by hand (BACKFILL_PLATFORM_ICEBERG_JARS) plus the catalog's declared JDBC driver,
    when the list names no jar of that artifact (by file name, any version) and this environment has it;
    otherwise the list is taken to provide a driver itself."""
    driver = jdbc_driver_jar(jdbc_uri, folder)
    if driver is None:
        return jars
    artifact = next(c.artifact for c in declared_jars() if c.file_name == driver.name)
    if any(re.match(rf"{re.escape(artifact)}([-.]|$)", Path(jar).name) for jar in jars):
        return jars
    return [*jars, str(driver)]
