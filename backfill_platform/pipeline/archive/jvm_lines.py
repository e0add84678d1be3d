"""Plain JSON-lines files read in the JVM: no Python stage for the files that need none of its care.

Most archive files are plain: UTF-8, lines within bounds, gzip streams intact. For those, the Python reader
(`readers`, `line_blocks`) costs a Python stage (workers, Arrow, a pass over every line) that Spark's own
sources never pay. The platform's JVM function `PlainLines` (`lakehouse/jvm/functions/`, in the jar every
session is given) scans each local file in a Spark job and reads the plain ones as Spark rows with their line
numbers, exactly as the Python reader gives them; the others (and every `s3://` object, which the JVM here has
no client for) stay the Python reader's, which names their defects as before.

Why not Spark's text source: it also ends lines at a lone CR, and it cannot number a file's lines when it packs
several files into one task. Why a scan first: which files need Python must be known before the plan is built,
so that a window of plain files starts no Python worker; the scan decompresses the files once more in the JVM,
which costs less than the Python pass it saves (see docs/performance.md).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

# lakehouse/jvm/functions/PlainLines.java, in the jar every session is given (lakehouse.jars).
# Paths and verdicts cross py4j as one string each, joined by NUL (no path holds one): py4j would
# convert a list a round trip per element. PlainLines.SEPARATOR is the same character.
_SEPARATOR = "\0"
_PLAIN_LINES = "backfill_platform.functions.PlainLines"


def jvm_readable(path: str, has_reader: bool) -> bool:
    """Whether the JVM may read the file at all: a local path (an `s3://` object is the Python reader's)."""
    return not has_reader and "://" not in path


def plain_files(spark: SparkSession, paths: list[str], max_line_bytes: int) -> list[str | None]:
    """For each path, in order, None when the JVM reads it as plain, else why not (one Spark job)."""
    if not paths:
        return []
    function = _plain_lines(spark)
    verdicts = function.check(
        spark._jsparkSession, _SEPARATOR.join(paths), max_line_bytes, task_count(spark, len(paths))
    )
    return [why or None for why in verdicts.split(_SEPARATOR)]


def read_plain_lines(spark: SparkSession, files: dict[int, str], max_line_bytes: int) -> DataFrame:
    """`_file int, _line_number bigint, line string` of plain files (index in the window -> path)."""
    function = _plain_lines(spark)
    indexes = list(files)
    rows = function.read(
        spark._jsparkSession,
        ",".join(map(str, indexes)),
        _SEPARATOR.join(files[index] for index in indexes),
        max_line_bytes,
        task_count(spark, len(indexes)),
    )
    # The bytes are well-formed UTF-8 (the scan proved it): the cast keeps them exactly.
    return DataFrame(rows, spark).select(
        "_file", "_line_number", F.col("_line_bytes").cast("string").alias("line")
    )


def _plain_lines(spark: SparkSession):
    from py4j.java_gateway import JavaClass

    function = spark._jvm.backfill_platform.functions.PlainLines
    if not isinstance(function, JavaClass):  # py4j's answer for a name it did not find: a package
        raise RuntimeError(
            f"the platform's JVM functions are not on this Spark session's classpath ({_PLAIN_LINES}): "
            "sessions get them from `lakehouse.jars.functions_jar()` (`make jars` builds it)"
        )
    return function


def task_count(spark: SparkSession, files: int) -> int:
    """How many tasks read `files` files (the Python reader's too): a few per core, never more than files."""
    return max(1, min(files, 4 * spark.sparkContext.defaultParallelism))
