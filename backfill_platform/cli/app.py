"""The `backfill-platform` command group and what its commands share (specs, Spark, output, refusals)."""

from __future__ import annotations

import errno
import os
import stat
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path

import click

from backfill_platform.cli.errors import RefusingGroup, refusal
from backfill_platform.specs.grain import Grain


@click.group(cls=RefusingGroup)
def main() -> None:
    """Re-derive history from an event archive safely."""
    from backfill_platform.components.registry import refuse_flat_route

    # Whatever the command: a spec folder named in the former variable is refused, never silently ignored.
    refuse_flat_route()
    # Dagster flags several APIs this platform relies on as beta; say so once in the docs, not per call.
    warnings.filterwarnings("ignore", category=Warning, module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")


@contextmanager
def refusals() -> Iterator[None]:
    """A refusal of the platform is an answer, not a crash: print it and exit non-zero."""
    try:
        yield
    except Exception as error:
        answer = refusal(error)
        if answer is None:
            raise
        raise answer from error


def regular_file_or_new(_ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A path option a command writes or reads as a file: a regular file (a link to one included) or a
    new one in an existing folder. A FIFO, a device, a socket or a folder is refused before anything
    opens it (opening a FIFO blocks until a reader comes; a device may never end)."""
    if value is None:
        return None
    try:
        mode = os.stat(value).st_mode
    except FileNotFoundError:
        if not value.parent.is_dir():
            raise click.BadParameter(f"{value}: its folder does not exist", param=param) from None
        return value
    except OSError as error:
        raise click.BadParameter(f"{value}: {error.strerror}", param=param) from None
    if not stat.S_ISREG(mode):
        raise click.BadParameter(f"{value}: not a regular file ({_kind(mode)})", param=param)
    return value


def folder_or_new(_ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A path option a command writes a folder of files to: an existing folder, or a new one."""
    if value is None:
        return None
    try:
        mode = os.stat(value).st_mode
    except FileNotFoundError:
        return value
    except OSError as error:
        raise click.BadParameter(f"{value}: {error.strerror}", param=param) from None
    if not stat.S_ISDIR(mode):
        raise click.BadParameter(f"{value}: not a folder ({_kind(mode)})", param=param)
    return value


def _kind(mode: int) -> str:
    kinds = [
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a regular file"),
    ]
    return next((name for test, name in kinds if test(mode)), "a special file")


def write_regular_file(path: Path, text: str) -> None:
    """Write `text` to `path`, a regular file (created if missing), judged by what was opened: a path
    swapped for a FIFO or a device after the option was checked is refused, never waited on."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, 0o644)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO nobody reads: opening it without O_NONBLOCK waits forever
            raise click.ClickException(f"{path}: not a regular file (a FIFO); nothing written") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise click.ClickException(f"{path}: not a regular file ({_kind(mode)}); nothing written")
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as out:
            out.write(text)
    finally:
        os.close(fd)


def spark_session():
    from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env

    return spark_from_env(catalog_from_env(for_dagster=False)).spark_session


def dataset_spec(name: str):
    from backfill_platform.components.registry import find_project, project_specs

    datasets = project_specs().datasets
    if name not in datasets:
        raise click.BadParameter(
            f"unknown dataset {name!r} in the project at {find_project().root}; known: {sorted(datasets)}",
            param_hint="--dataset",
        )
    return datasets[name]


def wide_console():
    from rich.console import Console

    return Console(width=160)


def report_to_dagster(materializations: list) -> None:
    """Record in the Dagster instance what production holds now for each day a command changed, so the
    UI's partitions of `prod/<dataset>_production` match the table (DAGSTER_HOME's instance, or
    `<data>/dagster`'s, see `backfill_platform.orchestration.instance`)."""
    from backfill_platform.orchestration.instance import instance_from_env

    with instance_from_env() as instance:
        for materialization in materializations:
            instance.report_runless_asset_event(materialization)
    click.echo(f"reported {len(materializations)} day(s) of production to the Dagster instance")


def quiet_dagster() -> None:
    """Dagster's beta/preview/supersession notices (partitioned checks, backfill policies, the custom
    hour → day mapping) are known and documented; a backfill's output is its report, not them."""
    from dagster import BetaWarning, PreviewWarning, SupersessionWarning

    for category in (BetaWarning, PreviewWarning, SupersessionWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="dagster")


# What --start and --end accept: a day, or an hour (UTC) for an hourly stream or dataset.
# An hour's partition key (`2026-10-01-14:00`, as `status` prints it) is accepted as it is.
RANGE_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d-%H:%M"]


def range_options(start_help: str, required: bool = True):
    """The `--start`/`--end` options of a command over a partition range: days, or hours of an hourly
    stream or dataset (RANGE_FORMATS); `start_help` says what --start is."""
    start = click.option("--start", type=click.DateTime(RANGE_FORMATS), required=required, help=start_help)
    end = click.option(
        "--end",
        type=click.DateTime(RANGE_FORMATS),
        required=required,
        help="Day (or hour) after the last one; an hourly range covers every hour it touches.",
    )
    return lambda command: start(end(command))


def partition_range(start: datetime, end: datetime, grain: Grain) -> tuple[date | datetime, date | datetime]:
    """[--start, --end) in whole partitions: days (dates) of a daily stream or dataset; for an hourly one
    UTC instants, --start floored and --end ceiled to the hour (a deploy wrong from 14:10 to 15:40
    re-derives 14:00 to 16:00), so that the range holds every hour it touches."""
    if grain.unit == "day":
        if start.time() != datetime.min.time() or end.time() != datetime.min.time():
            raise click.BadParameter(
                f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M}: partitioned by day, give days (2026-10-01)",
                param_hint="--start/--end",
            )
        return day_range(start, end)
    first, after = grain.floor(start.replace(tzinfo=UTC)), grain.ceil(end.replace(tzinfo=UTC))
    if after <= first:
        raise click.BadParameter(f"--end {end:%Y-%m-%dT%H:%M} must be after --start", param_hint="--end")
    return first, after


def day_range(start, end) -> tuple[date, date]:
    if end <= start:
        raise click.BadParameter(
            f"--end {end.date()} must be after --start {start.date()}", param_hint="--end"
        )
    return start.date(), end.date()
