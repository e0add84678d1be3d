"""The demo's third story: hours rolled up into New York days.

The same archive is declared a second time as an hourly stream (`playback_hourly`: each UTC hour ingested,
checked and promoted on its own), and `plays_new_york` counts plays per title and New York day over it.
One backfill of the days runs the hours they read (04:00 UTC to 04:00 UTC in October), then the days; each
day is validated only when every hour it reads passed its own checks, and its plays must equal what the
generator's truth says of those UTC hours.
"""

from __future__ import annotations

import time
from datetime import date, timedelta

from dagster import DagsterInstance
from rich.console import Console
from rich.table import Table

from backfill_platform.operations.backfill import BackfillRequest, report_table, throughput_line
from backfill_platform.operations.in_process import run_backfill
from backfill_platform.pipeline.names import production_table
from backfill_platform.specs.durations import HOUR
from backfill_platform.specs.spec_set import SpecSet


def hours_story(
    console: Console, dagster: DagsterInstance, specs: SpecSet, spark, truth: dict, first: date, after: date
) -> None:
    """Backfill New York days [first, after) of `plays_new_york` from the hours of `playback_hourly`, show
    the report, and compare each day's plays with the truth of the UTC hours it covers."""
    dataset, stream = specs.datasets["plays_new_york"], specs.streams["playback_hourly"]
    request = BackfillRequest(
        dataset, stream, first, after, reason="demo: New York days from UTC hours", sources=(stream,)
    )
    step = time.monotonic()
    outcome = run_backfill(request, dagster)
    if not outcome.ok:
        raise SystemExit("the New York backfill failed; see the report above")
    hours = len(request.source_keys(stream))
    console.print(
        f"\n[bold]8. hours → New York days[/bold]: {stream.name} (the archive by UTC hour) rolled up into "
        f"{dataset.name}, days of {dataset.partition_timezone}: {hours} hours in one run, then "
        f"{len(request.days)} days in another ({time.monotonic() - step:.1f} s)"
    )
    console.print(report_table(outcome))
    if line := throughput_line(outcome):
        console.print(line, markup=False, highlight=False)
    plays = {
        row["event_date"].isoformat(): row["plays"]
        for row in spark.sql(
            f"SELECT event_date, sum(plays) AS plays FROM {production_table(spark, dataset)} GROUP BY event_date"
        ).collect()
    }
    table = Table(title="plays per New York day: production against the generator's truth of its UTC hours")
    for column in ("New York day", "UTC hours read", "plays", "matches truth"):
        table.add_column(column, justify="right")
    for day in request.days:
        start, end = dataset.grain.bounds(day)
        expected = sum(_starts_in_hour(truth, start + n * HOUR) for n in range((end - start) // HOUR))
        table.add_row(
            day, f"{start:%m-%d %H:%M} → {end:%m-%d %H:%M} ({(end - start) // HOUR} h)",
            f"{plays.get(day, 0):,}", "yes" if plays.get(day) == expected else "[red]NO",
        )  # fmt: skip
    console.print(table)


def _starts_in_hour(truth: dict, hour) -> int:
    """The plays (kept starts) of one UTC event hour, as the generator counted them."""
    day = truth["partitions"].get(hour.date().isoformat(), {})
    return day.get("starts_by_hour", {}).get(str(hour.hour), 0)


def new_york_days(start: date, days: int) -> tuple[date, date]:
    """The New York days inside the demo's UTC days: the last UTC day's evening is the next New York day."""
    return start, start + timedelta(days=days - 1)
