"""The demo: a week of playback history, re-derived with a fixed transform and promoted safely.

1. generate a synthetic archive (and the impressions beside it); 2. materialize the events for the week
in one run; 3. adopt what the old v1 pipeline left in production; 4. show v1's shadow failing its
per-bucket checks; 5. backfill the week with v2 — events → shadow → checks → promotion in one run;
6. report per day from the ledger; 7. the join of seed 003: plays attributed to impressions across
midnight (`devtools/demo/attribution.py`); 8. the archive by UTC hour, rolled up into New York days
(`devtools/demo/hours.py`).
"""

from __future__ import annotations

import shutil
import time
import warnings
from datetime import date, timedelta

from dagster import (
    AssetCheckSeverity,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    BetaWarning,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    TableMetadataValue,
    define_asset_job,
    materialize,
)
from rich.console import Console
from rich.table import Table

from backfill_platform import settings
from backfill_platform.components.registry import package_project, project_definitions, project_specs
from backfill_platform.dagster_internals import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from backfill_platform.devtools.demo.attribution import attribution_story
from backfill_platform.devtools.demo.erasure import erasure_story
from backfill_platform.devtools.demo.hours import hours_story, new_york_days
from backfill_platform.devtools.demo.legacy_table import write_legacy_table
from backfill_platform.devtools.generator.impressions import generate_impressions_archive
from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.operations.ledger_report import promotion_report
from backfill_platform.pipeline.archive.assets import OBSERVE_ALL_TAG, build_archive_asset
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.partitions import ingestion_partitions
from backfill_platform.pipeline.promotion.adopt import adopt
from backfill_platform.pipeline.run_tags import REASON_TAG, TICKET_TAG
from backfill_platform.pipeline.validation.metadata_tables import table_markdown
from backfill_platform.specs.durations import DAY

console = Console(width=140)


def quiet(level: str) -> dict:
    return {"loggers": {"console": {"config": {"log_level": level}}}}


def instance() -> DagsterInstance:
    """The local Dagster instance (runs show up in `make ui`), or an ephemeral one without DAGSTER_HOME."""
    try:
        return DagsterInstance.get()
    except Exception:  # DAGSTER_HOME unset: nothing to show in a UI later, run in memory
        return DagsterInstance.ephemeral()


def range_tags(start: date, end: date, **extra: str) -> dict[str, str]:
    return {
        ASSET_PARTITION_RANGE_START_TAG: start.isoformat(),
        ASSET_PARTITION_RANGE_END_TAG: end.isoformat(),
        **extra,
    }


def reset_lakehouse() -> None:
    """The demo owns the embedded tier's lakehouse: start from an empty catalog each time."""
    data = settings.data_dir()
    for path in (data / "catalog.db", data / "catalog.db-wal", data / "catalog.db-shm"):
        path.unlink(missing_ok=True)
    for folder in (data / "warehouse", data / "archive"):
        shutil.rmtree(folder, ignore_errors=True)


def observe(assets: list[AssetsDefinition], **kwargs) -> ExecuteInProcessResult:
    """One in-process run observing `assets`: what Dagster's `observe` does (not exported by 1.13)."""
    with warnings.catch_warnings():  # `include_sources` is beta; `observe` silences it too
        warnings.simplefilter("ignore", BetaWarning)
        sources = AssetSelection.all(include_sources=True)
    job = define_asset_job("in_process_observation_job", selection=sources)
    return Definitions(assets=assets, jobs=[job]).resolve_job_def(job.name).execute_in_process(**kwargs)


def run_demo(start: date, days: int, events_per_day: int) -> None:
    began = time.monotonic()
    last = start + timedelta(days=days - 1)
    end = last + DAY
    console.rule("[bold]backfill_platform demo")
    console.print(f"data directory: {settings.data_dir()} (lakehouse reset; Dagster runs kept for `make ui`)")
    reset_lakehouse()

    step = time.monotonic()
    truth = generate_playback_archive(
        settings.data_dir() / "archive" / "playback",
        GeneratorConfig(start=start, days=days, events_per_day=events_per_day, seed=7),
    )
    archives = (settings.data_dir() / "archive" / "playback", settings.data_dir() / "archive" / "impressions")
    shown = generate_impressions_archive(archives[1], archives[0])
    console.print(
        f"\n[bold]1. archive[/bold]: {truth['totals']['files']} hourly gzipped JSON-lines files, "
        f"{truth['totals']['lines']:,} lines ({time.monotonic() - step:.1f} s); and the impressions "
        f"beside them: {shown['totals']['lines']:,} lines in {shown['totals']['files']} files"
    )

    specs = project_specs(package_project())
    defs = project_definitions(package_project())
    stream, views = specs.streams["playback"], specs.datasets["views_per_title"]
    spark_resource = defs.resources["spark"]
    dagster = instance()

    def run(keys: list[tuple[str, str]], log_level: str = "ERROR", **tags: str):
        return materialize(
            [defs.get_assets_def(AssetKey(list(k))) for k in keys],
            resources={"spark": spark_resource},
            instance=dagster,
            tags=range_tags(start, last, **tags),
            run_config=quiet(log_level),
            raise_on_error=False,
        )

    # Observed once, as the daily refresh's sensor would: the UI shows each ingestion hour's data version
    # of both archives the demo reads (the impressions' are read by step 7's join).
    for archived in (stream, specs.streams["impressions"]):
        observed = observe(
            [build_archive_asset(archived)],
            instance=dagster,
            partition_key=ingestion_partitions(archived).get_last_partition_key(),
            run_config=quiet("ERROR"),
            tags={OBSERVE_ALL_TAG: "true"},  # the archive was just regenerated: every hour is new
        )
        hours = sum(1 for e in observed.all_events if e.event_type_value == "ASSET_OBSERVATION")
        console.print(
            f"   observed archive/{archived.name}: a data version for each of its {hours} ingestion hours"
        )

    events_key = ("raw", stream.events_table)
    step = time.monotonic()
    result = run([events_key], **{REASON_TAG: "demo: initial load"})
    if not result.success:
        raise SystemExit("the events run failed; see the log above")
    console.print(
        f"\n[bold]2. events[/bold]: raw/playback_events for {start}…{last} in one run ({time.monotonic() - step:.1f} s)"
    )
    events_rate = print_events_report(result, truth, AssetKey(list(events_key)))
    events_rate /= step_seconds(dagster, result, events_key)

    spark = spark_resource.spark_session
    legacy = write_legacy_table(spark, views, stream, "v1", start, end)
    snapshot = adopt(
        spark, views, legacy, start, end, reason="history written by the legacy v1 job", by="demo"
    )
    console.print(
        f"\n[bold]3. adopt[/bold]: production prod/views_per_title_production (table lake.prod.views_per_title) = what the legacy v1 job left ({legacy}), "
        f"adopted as unvalidated in snapshot {snapshot}"
    )

    step = time.monotonic()
    # Expected to fail: the blocking checks stop it, so Dagster's error log is silenced here.
    v1 = run(
        [("shadow", views.shadow_table("v1"))], "CRITICAL", **{REASON_TAG: "demo: validate the legacy logic"}
    )
    failing = ledger(spark, views.name).where("version = 'v1' AND NOT checks_passed").count()
    console.print(
        f"\n[bold]4. shadow v1[/bold] (the legacy logic, re-run through the platform): "
        f"{'[red]blocked, as expected[/red]' if not v1.success else 'passed'} — {failing}/{days} days fail; "
        f"row counts wrong in {total(v1, 'row_counts_per_bucket', 'buckets_failed')} hour buckets, "
        f"sums wrong in {total(v1, 'checksums_per_bucket', 'buckets_failed')} "
        f"(late events counted in their ingestion hour). ({time.monotonic() - step:.1f} s)"
    )

    step = time.monotonic()
    backfill = run(
        [events_key, ("shadow", views.shadow_table("v2")), ("prod", f"{views.name}_production")],
        **{REASON_TAG: "re-derive views with v2: late events in their event hour", TICKET_TAG: "DEMO-1"},
    )
    backfill_seconds = time.monotonic() - step
    if not backfill.success:
        raise SystemExit("the v2 backfill failed; see the log above")
    promoted = day_figures(backfill, AssetKey(["prod", f"{views.name}_production"]))
    console.print(
        f"\n[bold]5. backfill v2[/bold]: events → shadow v2 → checks → promotion for {start}…{last} in one run "
        f"({backfill_seconds:.1f} s). Checks, each recorded per day: {check_summary(backfill)}"
    )
    divergence = [
        c for c in backfill.get_asset_check_evaluations() if c.check_name == "divergence_vs_production"
    ]
    diverging = sum(c.metadata["diverging_rows"].value for c in divergence)
    base = sum(max(c.metadata["shadow_rows"].value, c.metadata["production_rows"].value) for c in divergence)
    first = min(divergence, key=lambda c: c.partition)
    console.print(
        f"   divergence of v2 against the adopted production: {diverging:,} rows "
        f"({diverging / base if base else 0:.1%}); a sample of {first.partition}:"
    )
    sample = first.metadata["sample"]
    text = table_markdown(sample) if isinstance(sample, TableMetadataValue) else str(sample.value)
    console.print("\n".join(text.split("\n")[0:8]), markup=False)
    snapshots = {m["snapshot_id"] for m in promoted.values()}
    console.print(
        f"   promoted in one commit: snapshot {', '.join(sorted(snapshots))} "
        f"({len(promoted)} days, rows {sum(m['rows'] for m in promoted.values()):,})"
    )

    console.print("\n[bold]6. report[/bold]")
    console.print(promotion_report(spark, views.name, "v2"))
    records = sum(
        truth["partitions"][(start + timedelta(days=i)).isoformat()]["records"] for i in range(days)
    )
    events_step = records / step_seconds(dagster, backfill, events_key)
    console.print(
        f"speed: events step {events_step:,.0f} events/s inside the backfill "
        f"({events_rate:,.0f} in step 2's cold start); whole validated backfill "
        f"(events → shadow → checks → promotion, one run) {records / backfill_seconds:,.0f} events/s"
    )
    day_keys = [(start + timedelta(days=i)).isoformat() for i in range(days)]
    attribution_story(console, run, spark, specs.datasets["attributed_plays"], archives, day_keys)
    hours_story(console, dagster, specs, spark, truth, *new_york_days(start, days))
    erasure_story(console, run, spark, stream, views, days)
    console.print(
        f"\nundo the promotion: [bold].venv/bin/backfill-platform revert --dataset {views.name}[/bold]\n"
        f"audit trail:        .venv/bin/backfill-platform ledger --dataset {views.name}\n"
        f"UI:                 make ui  → http://127.0.0.1:3000"
    )
    console.print(f"\ndemo finished in {time.monotonic() - began:.1f} s")


def day_figures(result, key: AssetKey) -> dict[str, dict]:
    """Each day's materialization metadata of `key` in a run: that day's own figures."""
    return {
        m.partition: {k: v.value for k, v in m.metadata.items()}
        for m in (e.event_specific_data.materialization for e in result.get_asset_materialization_events())
        if m.asset_key == key
    }


def check_summary(result) -> str:
    """`check passed` when every day passed it, else the days it failed (or warned) on."""
    by_check: dict[str, list] = {}
    for c in result.get_asset_check_evaluations():
        by_check.setdefault(c.check_name, []).append(c)
    parts = []
    for name, evaluations in by_check.items():
        failed = sorted(c.partition for c in evaluations if not c.passed)
        if not failed:
            parts.append(f"{name} passed")
        elif all(c.severity == AssetCheckSeverity.WARN for c in evaluations if not c.passed):
            parts.append(f"{name} warning on {len(failed)} days")
        else:
            parts.append(f"{name} [red]FAILED[/red] on {', '.join(failed)}")
    return ", ".join(parts)


def total(result, check: str, field: str) -> int:
    """A number summed over the per-day evaluations of one check."""
    return sum(c.metadata[field].value for c in result.get_asset_check_evaluations() if c.check_name == check)


def step_seconds(dagster: DagsterInstance, result, key: tuple[str, str]) -> float:
    """Wall time of an asset's step in a run, as Dagster recorded it."""
    step_key = AssetKey(list(key)).to_python_identifier()
    stats = next(s for s in dagster.get_run_step_stats(result.run_id) if s.step_key == step_key)
    return stats.end_time - stats.start_time


def print_events_report(result, truth: dict, key: AssetKey) -> float:
    """Per-day figures of the events run, checked against the generator's truth; returns the records."""
    figures = day_figures(result, key)
    table = Table(title="events per event-time day (read = written + duplicates + quarantined + erased)")
    for column in ("day", "read", "written", "duplicates", "quarantined", "late", "matches truth"):
        table.add_column(column, justify="right")
    for day, m in sorted(figures.items()):
        expected = truth["partitions"].get(day, {})
        ok = expected.get("written") == m["written"] and expected.get("records") == m["records"]
        table.add_row(
            day, f"{m['records']:,}", f"{m['written']:,}", f"{m['duplicates']:,}",
            f"{m['quarantined']:,}", f"{m['late']:,}", "yes" if ok else "[red]NO",
        )  # fmt: skip
    console.print(table)
    records = sum(m["records"] for m in figures.values())
    console.print(f"events step: {records:,} records; checks, each recorded per day: {check_summary(result)}")
    return records
