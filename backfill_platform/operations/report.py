"""`backfill-platform report --backfill ID`: what one backfill (or run) did, partition by partition (day
by day, or hour by hour for an hourly dataset), in markdown.

ID is a Dagster backfill id or a run id. The ledger says what each validation judged and what was
published: its rows name the validation run (`run_id`), the Dagster backfill it belonged to
(`backfill_id`) and the promotion run (`promotion_run_id`); `platform.ingestions` rows name the events
run; production's snapshots carry `dagster.run-id` and `dagster.backfill-id` (`pipeline/run_tags.run_properties`).
Everything is read through PyIceberg (`operations.ledger_view`): no Spark session is started. For a
backfill id, the runs the Dagster instance of DAGSTER_HOME knows for it are matched too, so an events
run of the backfill is found by its run id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.lakehouse.tables import PROD_NAMESPACE
from backfill_platform.operations.ledger_view import Row, read_rows
from backfill_platform.operations.ranges import partition_noun
from backfill_platform.pipeline.ledger.commits import ACTION, VERSION, commit_days
from backfill_platform.pipeline.ledger.latest import latest_key
from backfill_platform.pipeline.ledger.ledger import INGESTIONS_TABLE, LEDGER_TABLE, key_of_row
from backfill_platform.pipeline.run_tags import BACKFILL_ID, RUN_ID
from backfill_platform.pipeline.validation.markdown import markdown_table


class UnknownBackfill(ValueError):
    """Neither the ledger nor production's history names this backfill or run."""


@dataclass(frozen=True)
class Commit:
    """A production snapshot written by the backfill or run (promotion, revert, adoption)."""

    dataset: str
    snapshot_id: int
    committed_at: datetime
    action: str
    version: str
    days: list[str]  # the partition keys it replaced: days, or hours
    run_id: str | None


@dataclass
class BackfillReport:
    ident: str
    run_ids: set[str]  # the id itself, and the runs of a Dagster backfill of that id
    validations: dict[str, list[Row]] = field(default_factory=dict)  # dataset -> its ledger rows
    events: dict[str, list[Row]] = field(default_factory=dict)  # stream -> events-only ingestion rows
    commits: list[Commit] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.validations or self.events or self.commits)


def backfill_runs(ident: str) -> set[str]:
    """The id, plus the run ids of the Dagster backfill of that id (in the platform's instance)."""
    from dagster import RunsFilter

    from backfill_platform.orchestration.instance import instance_from_env

    with instance_from_env() as instance:
        if instance.get_backfill(ident) is None:
            return {ident}
        return {ident, *instance.get_run_ids(filters=RunsFilter.for_backfill(ident))}


def _validation_key(row: Row) -> tuple:
    """What names one validation: its dataset, version, partition and run."""
    return row["dataset"], row["version"], key_of_row(row), row["run_id"]


def commits_of_backfill(catalog: Any, run_ids: set[str], ident: str) -> list[Commit]:
    """Snapshots of every production table whose properties name one of the runs or the backfill."""
    from pyiceberg.exceptions import NoSuchNamespaceError

    try:
        tables = catalog.list_tables(PROD_NAMESPACE)
    except NoSuchNamespaceError:
        return []
    commits = []
    for identifier in tables:
        for snapshot in catalog.load_table(identifier).snapshots():
            summary = snapshot.summary.additional_properties if snapshot.summary else {}
            if summary.get(RUN_ID) not in run_ids and summary.get(BACKFILL_ID) != ident:
                continue
            commits.append(
                Commit(
                    dataset=identifier[-1],
                    snapshot_id=snapshot.snapshot_id,
                    committed_at=datetime.fromtimestamp(snapshot.timestamp_ms / 1000, UTC),
                    action=summary.get(ACTION, "-"),
                    version=summary.get(VERSION, "-"),
                    days=commit_days(summary) or [],
                    run_id=summary.get(RUN_ID),
                )
            )
    return sorted(commits, key=lambda c: (c.committed_at, c.snapshot_id))


def build_report(ident: str, run_ids: set[str] | None = None) -> BackfillReport:
    """Every ledger row, events-only ingestion and production commit of a backfill or run.

    Raises UnknownBackfill when nothing names it.
    """
    catalog = open_catalog()
    runs = run_ids if run_ids is not None else backfill_runs(ident)
    rows = [r for column in ("run_id", "promotion_run_id") for run in runs
            for r in read_rows(catalog, LEDGER_TABLE, column, run)]  # fmt: skip
    rows += read_rows(catalog, LEDGER_TABLE, "backfill_id", ident)
    report = BackfillReport(ident, runs)
    unique = {_validation_key(r): r for r in rows}.values()  # a row can name a run in two columns
    for row in sorted(unique, key=lambda r: (r["dataset"], key_of_row(r), latest_key(r))):
        report.validations.setdefault(row["dataset"], []).append(row)
    streams = {r["stream"] for r in rows}
    ingestions = [r for run in runs for r in read_rows(catalog, INGESTIONS_TABLE, "run_id", run)]
    for row in sorted(ingestions, key=lambda r: (r["stream"], key_of_row(r))):
        if row["stream"] not in streams:  # a backfill's ledger rows already carry their events figures
            report.events.setdefault(row["stream"], []).append(row)
    report.commits = commits_of_backfill(catalog, runs, ident)
    if report.empty:
        raise UnknownBackfill(
            f"no ledger row, events run or production snapshot names backfill or run {ident!r} "
            "(give a Dagster backfill id or a run id, as `backfill` and the Dagster UI show them)"
        )
    return report


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _at(value: datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M:%S} UTC"


def _checks(row: Row) -> str:
    if row["checks_passed"] is None:
        return "-"
    return "passed" if row["checks_passed"] else f"FAILED {row['failed_checks']}"


def _promotion(row: Row) -> list[str]:
    snapshot = row["promoted_snapshot_id"]
    if snapshot is None:
        return ["not promoted", "-"]
    reverted = row["reverted_snapshot_id"]
    label = f"{snapshot}" + (f" (reverted by {reverted})" if reverted else "")
    return [label, _at(row["promoted_at"])]


def summary(rows: list[Row]) -> str:
    """`3 day(s): 2 passed their checks, 1 failed; 2 promoted (1 since reverted); reason: …` (`hour(s)`
    for an hourly dataset's rows)."""
    verdicts = [r["checks_passed"] for r in rows]
    promoted = [r for r in rows if r["promoted_snapshot_id"] is not None]
    reverted = sum(1 for r in promoted if r["reverted_snapshot_id"] is not None)
    noun = partition_noun(map(key_of_row, rows))
    text = f"{len(rows)} {noun}(s): {verdicts.count(True)} passed their checks"
    text += f", {verdicts.count(False)} failed"
    text += f", {verdicts.count(None)} unvalidated (adopted)" if None in verdicts else ""
    text += f"; {len(promoted)} promoted"
    text += f" ({reverted} since reverted)" if reverted else ""
    reasons = sorted({r["reason"] for r in rows if r.get("reason")})
    return text + (f"; reason: {', '.join(reasons)}" if reasons else "")


# What the tables' `late` counts: not a problem, a measure of the archive's lateness.
LATE_LEGEND = (
    "late: events written whose archive line sits in a later ingestion hour than the hour of their event "
    "time (counted in events written; lines later than the stream's allowed lateness are quarantined instead)"
)


def report_markdown(report: BackfillReport) -> str:
    """The report: per dataset and partition the ledger's figures, then the production commits."""
    runs = sorted(report.run_ids - {report.ident})
    lines = [f"# Backfill report: {report.ident}", ""]
    if runs:
        lines += [f"Dagster backfill of {len(runs)} run(s): {', '.join(runs)}", ""]
    for dataset, rows in report.validations.items():
        lines += validations_section(dataset, rows)
    for stream, rows in report.events.items():
        lines += events_section(stream, rows)
    if report.validations or report.events:
        lines += [f"*{LATE_LEGEND}*", ""]
    return "\n".join(lines + commits_section(report.commits)) + "\n"


def validations_section(dataset: str, rows: list[Row]) -> list[str]:
    """A dataset's validations, one table row per partition and run, from `platform.ledger`."""
    noun = partition_noun(map(key_of_row, rows))
    header = [noun, "version", "run", "archive records", "events written", "duplicates", "quarantined",
              "erased", "late", "shadow rows", "shadow hash sum", "diverging rows", "checks", "promoted snapshot",
              "promoted at", "input partitions"]  # fmt: skip
    table = [
        [key_of_row(r), r["version"], r["run_id"], _n(r["records"]), _n(r["events_written"]),
         _n(r["duplicates"]), _n(r["quarantined"]), _n(r.get("erased")), _n(r["late"]), _n(r["shadow_rows"]),
         r["shadow_row_hash"] or "-", _n(r["diverging_rows"]), _checks(r), *_promotion(r),
         r.get("input_partitions") or "-"]
        for r in rows
    ]  # fmt: skip
    intro = f"Per {noun}, from `platform.ledger`:"
    return [f"## {dataset}", "", summary(rows), "", intro, "", markdown_table(header, table), ""]


def events_section(stream: str, rows: list[Row]) -> list[str]:
    """A stream's events-only ingestions, one table row per partition and run, from `platform.ingestions`."""
    noun = partition_noun(map(key_of_row, rows))
    header = [noun, "run", "archive records", "events written", "duplicates", "quarantined", "erased", "late",
              "checks"]  # fmt: skip
    table = [
        [key_of_row(r), r["run_id"], _n(r["records"]), _n(r["written"]), _n(r["duplicates"]),
         _n(r["quarantined"]), _n(r.get("erased")), _n(r["late"]), _checks(r)]
        for r in rows
    ]  # fmt: skip
    intro = f"Per {noun}, from `platform.ingestions`:"
    return [f"## events of {stream}", "", intro, "", markdown_table(header, table), ""]


def commits_section(commits: list[Commit]) -> list[str]:
    """The production snapshots, each with the partitions it replaced."""
    if not commits:
        return ["## Production commits", "", "none: this backfill or run changed no production table"]
    replaced = partition_noun((key for c in commits for key in c.days), plural=True)
    header = ["dataset", "snapshot", "committed at", "action", "version", replaced, "run"]
    table = [
        [c.dataset, c.snapshot_id, _at(c.committed_at), c.action, c.version, ", ".join(c.days) or "-",
         c.run_id or "-"]
        for c in commits
    ]  # fmt: skip
    return ["## Production commits", "", markdown_table(header, table)]
