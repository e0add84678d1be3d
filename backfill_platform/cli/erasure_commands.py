"""Erasure commands: file requests and clean forward (`erase`), purge old snapshots (`erasure-purge`), and
prove what remains (`erasure-audit`). No command prints a subject: only request ids, tables and counts."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import click

from backfill_platform.cli.app import main, refusals, spark_session
from backfill_platform.specs.durations import format_duration


def _project():
    from backfill_platform.components.registry import project_specs

    specs = project_specs()
    return specs.streams, specs.datasets


def _read_subjects(subjects: tuple[str, ...], subjects_file: Path | None) -> list[str]:
    """The subjects given, one per `--subject` or one per line of the file (blank lines skipped)."""
    found = [s.strip() for s in subjects if s.strip()]
    if subjects_file is not None:
        found += [
            line.strip() for line in subjects_file.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    if not found:
        raise click.UsageError("give --subject (repeatable) or --subjects-file")
    return found


def _days(value: str) -> timedelta:
    text = value.strip().lower().removesuffix("d")
    try:
        days = float(text)
    except ValueError:
        raise click.BadParameter(f"{value!r}: a number of days, e.g. 0d or 2d") from None
    return timedelta(days=days)


@main.command()
@click.option("--stream", default=None, help="The stream the request is scoped to.")
@click.option("--all", "all_streams", is_flag=True, help="Scope the request to every stream.")
@click.option("--subject", "subjects", multiple=True, help="A subject to erase (repeatable); never printed.")
@click.option(
    "--subjects-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A file of subjects, one per line.",
)
@click.option("--reason", required=True, help="Why (e.g. the ticket's summary); recorded with the requests.")
@click.option(
    "--request-id", default=None, help="The request's id (a ticket), numbered for several subjects."
)
def erase(
    stream: str | None,
    all_streams: bool,
    subjects: tuple[str, ...],
    subjects_file: Path | None,
    reason: str,
    request_id: str | None,
) -> None:
    """File erasure requests and clean forward at once: the subjects' rows leave the events, shadow and
    production tables (copy-on-write deletes) and their quarantined lines lose their text."""
    from backfill_platform.operations.erasure import erase as erase_subjects
    from backfill_platform.pipeline.erasure.requests import ALL_STREAMS

    if bool(stream) == all_streams:
        raise click.UsageError("give exactly one of --stream NAME or --all")
    wanted = _read_subjects(subjects, subjects_file)
    streams, datasets = _project()
    scope = ALL_STREAMS if all_streams else stream
    with refusals():
        result = erase_subjects(spark_session(), streams, datasets, wanted, scope, reason, request_id)
    click.echo(
        f"filed {len(result.request_ids)} new request(s): {', '.join(result.request_ids) or '-'} "
        f"(requests snapshot {result.requests_snapshot_id})"
    )
    for clean in result.cleans:
        verb = "lines stripped of their text" if clean.kind == "quarantine" else "rows removed"
        at = f"snapshot {clean.snapshot_id}" if clean.snapshot_id is not None else "nothing to clean"
        click.echo(f"  {clean.table} ({clean.kind}): {clean.rows:,} {verb}, {at}")
    for stream_name in result.not_covered:
        click.echo(f"  {stream_name}: declares no subject_field, not covered by erasure")
    for rederive in result.rederive:
        click.echo(
            f"  {rederive.dataset} aggregates the subject away; its days {rederive.days[0]}..{rederive.days[-1]} "
            f"are re-derived by: {rederive.command}"
        )
    click.echo("retained snapshots still hold the erased rows until `backfill-platform erasure-purge`")


@main.command("erasure-purge")
@click.option(
    "--older-than",
    default="0d",
    show_default=True,
    help="Purge only the cleans at least this old (a grace period to undo a mistaken clean).",
)
def erasure_purge(older_than: str) -> None:
    """Expire the snapshots older than each table's latest erasure clean and remove orphan files, so no
    retained snapshot holds an erased subject."""
    from backfill_platform.operations.erasure import ORPHAN_SAFETY, purge

    with refusals():
        purged = purge(spark_session(), _days(older_than))
    if not purged:
        click.echo("no cleaned table to purge")
    for p in purged:
        click.echo(
            f"{p.table}: {p.expired_snapshots} snapshot(s) before the clean of {p.cleaned_at:%Y-%m-%d %H:%M:%S} "
            f"UTC expired, {p.data_files_deleted} data file(s) deleted, {p.orphan_files_removed} orphan file(s) "
            f"removed (orphans younger than {format_duration(ORPHAN_SAFETY)} are kept)"
        )
        if p.other_refs:
            click.echo(
                f"  tags/branches still pin older snapshots (not the platform's; drop them): {p.other_refs}"
            )


@main.command("erasure-audit")
def erasure_audit() -> None:
    """Count the erased subjects' rows at every retained snapshot of every table that can hold them; exit
    non-zero when a hit is past its purge date (the clean's time plus the declared bound)."""
    from backfill_platform.operations.erasure import PURGE_WITHIN_ENV, audit, purge_within

    streams, datasets = _project()
    with refusals():
        result = audit(spark_session(), streams, datasets)
    click.echo(
        f"audited {len(result.tables)} table(s), {result.snapshots_read} retained snapshot(s); "
        f"purge bound {format_duration(purge_within())} ({PURGE_WITHIN_ENV})"
    )
    if not result.hits:
        click.echo("zero hits")
    for hit in result.hits:
        state = "OVERDUE" if hit.overdue else "pending"
        click.echo(
            f"hit: {hit.table} snapshot {hit.snapshot_id} committed {hit.committed_at:%Y-%m-%d %H:%M:%S} UTC: "
            f"{hit.rows:,} row(s), purged by {hit.purge_by:%Y-%m-%d %H:%M} UTC ({state})"
        )
    for name in result.rederived:
        click.echo(f"{name}: aggregates the subject away, covered by re-derivation")
    if result.overdue:
        click.echo(f"{len(result.overdue)} hit(s) past their purge date", err=True)
        sys.exit(1)
