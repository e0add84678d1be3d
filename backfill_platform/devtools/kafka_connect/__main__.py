"""Land a Kafka topic in an Iceberg table with Iceberg's own sink, in the foreground (`make kafka-connect`).

    python -m backfill_platform.devtools.kafka_connect --topic playback --table raw_landing.playback
        [--catalog NAME] [--bootstrap HOST:PORT] [--partitions 1] [--auto-create] [--port 8083]

Starts a Kafka Connect worker (standalone) running Apache Iceberg's sink connector from the topic into the
table, after creating what the sink needs and the broker will not create itself: the topic (`--partitions`,
when missing), the sink's control topic (one partition, when missing; never recreated: it belongs to the
table), the namespace, and the table in the landing shape the platform reads best (`payload` string
column, the sink's four `_kafka_metadata_*` columns, hourly partitions of the Kafka timestamp, full
metrics on the metadata columns), unless it exists or `--auto-create` lets the sink create it from the
first records' fields. Then it prints what it started and the `archive:` lines a stream declares to read
the table, and waits until Ctrl-C (or SIGTERM), which stops the worker.

The catalog is the platform's own (BACKFILL_PLATFORM_CATALOG_URI, _WAREHOUSE, _TOKEN, _CREDENTIAL, the
standard AWS variables), or with `--catalog NAME` a team's landing catalog
(BACKFILL_PLATFORM_ARCHIVE_CATALOG_<NAME>_URI, ...): a REST catalog either way (Iceberg's sink ships no
SQLite driver; `make rest-catalog` serves one). The broker is `--bootstrap`, else
BACKFILL_PLATFORM_KAFKA_BOOTSTRAP, else `make kafka`'s 127.0.0.1:9092. A catalog token or credential reaches
the connector as an environment reference (`${env:…}`), so neither the worker's log nor its REST API holds
it; S3 credentials come from the worker's environment (the AWS SDK's default chain).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from backfill_platform import settings
from backfill_platform.devtools.kafka_connect.iceberg_sink import (
    METADATA_FIELD,
    S3_FILE_IO,
    control_topic_for,
    iceberg_sink_config,
)
from backfill_platform.devtools.kafka_connect.worker import connect_worker, env_reference
from backfill_platform.devtools.tool_jars import serve_in_foreground, stop_on_sigterm
from backfill_platform.lakehouse.resources import (
    ARCHIVE_CATALOG_ENV,
    IcebergCatalogResource,
    archive_catalog_from_env,
    catalog_from_env,
)
from backfill_platform.masking import mask
from backfill_platform.specs.archive_location import ArchiveSpec

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
PAYLOAD_COLUMN = "payload"
# The first task start loads the catalog and the table over the network: generous on a busy machine.
RUNNING_TIMEOUT_SECONDS = 120
ADMIN_TIMEOUT_SECONDS = 15


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.kafka_connect",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--topic", required=True, help="the topic to land (created when missing)")
    parser.add_argument("--table", required=True, help="the landing table, namespace.table")
    parser.add_argument(
        "--catalog",
        default="",
        help="a named landing catalog (BACKFILL_PLATFORM_ARCHIVE_CATALOG_<NAME>_URI…; default: the platform's)",
    )
    parser.add_argument(
        "--bootstrap",
        default="",
        help=f"the broker (default: {settings.KAFKA_BOOTSTRAP_ENV}, else {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--partitions", type=int, default=1, help="partitions of the topic if it is created (default 1)"
    )
    parser.add_argument(
        "--auto-create",
        action="store_true",
        help="let the sink create the table from the records' top-level fields instead of the landing shape",
    )
    parser.add_argument("--port", type=int, default=8083, help="the worker's REST port (0 = any free port)")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="the worker's configuration and log (default: <data dir>/kafka-connect)",
    )
    args = parser.parse_args(argv)
    if args.partitions < 1:
        parser.error("--partitions must be at least 1")
    stop_on_sigterm()
    try:
        archive = landing_archive(args.topic, args.table, args.catalog, payload=not args.auto_create)
        catalog = rest_catalog(args.catalog)
    except ValueError as error:  # a name or a setting refused: say which, without a traceback
        print(f"kafka-connect: error: {mask(error)}", file=sys.stderr)
        return 2
    secrets = (catalog.rest_token or "", catalog.rest_credential or "")
    bootstrap = (
        args.bootstrap or os.environ.get(settings.KAFKA_BOOTSTRAP_ENV, "").strip() or DEFAULT_BOOTSTRAP
    )
    try:
        made = prepare(bootstrap, args.topic, args.partitions, catalog, args.table, args.auto_create)
    except Exception as error:  # no broker, a refused catalog: its text may hold a URL or a header value
        print(f"kafka-connect: error: {mask(error, secrets)}", file=sys.stderr)
        return 1
    if not args.auto_create and not made.table_has_payload:
        # An existing table of other columns: rows are its typed columns, not one JSON text.
        archive = landing_archive(args.topic, args.table, args.catalog, payload=False)
    state_dir = args.state_dir or settings.data_dir() / "kafka-connect"
    name = f"iceberg-{args.topic}"
    try:
        return run_worker(state_dir, bootstrap, args, catalog, archive, made, name, secrets)
    except KeyboardInterrupt:  # Ctrl-C while the worker was starting: it is stopped already (its `with`)
        print("kafka-connect: interrupted before the connector ran", file=sys.stderr)
        return 130
    except (RuntimeError, TimeoutError) as error:  # the worker or the connector failed: its log's tail
        print(f"kafka-connect: error: {mask(error, secrets)}", file=sys.stderr)
        return 1


def run_worker(
    state_dir: Path,
    bootstrap: str,
    args: argparse.Namespace,
    catalog: IcebergCatalogResource,
    archive: dict[str, Any],
    made: Prepared,
    name: str,
    secrets: Sequence[str],
) -> int:
    """Start the worker and the connector, print what runs (masked), and wait for Ctrl-C."""
    with connect_worker(state_dir, bootstrap, port=args.port) as worker:
        worker.put_connector(name, sink_config(args.topic, args.table, catalog, args.catalog, bootstrap))
        worker.wait_until_running(name, timeout=RUNNING_TIMEOUT_SECONDS)
        banner = [
            f"Kafka Connect worker at {worker.url} (log {worker.log_path}) running connector {name}: "
            f"Iceberg's sink from topic {args.topic!r} on {bootstrap} into table {args.table} "
            f"({made.describe()}).",
            f"Catalog {catalog_label(args.catalog)}: {catalog.rest_uri}, warehouse {catalog.warehouse or '(the server default)'}.",
            "Each record's value must be a JSON object"
            + (f" (the event under {PAYLOAD_COLUMN!r}, as JSON text)." if made.table_has_payload else "."),
            "Declare the stream's archive as (docs/your-own-archive.md, 'Archives that are Iceberg tables'):",
            *archive_yaml(archive),
        ]
        return serve_in_foreground(worker.process, [mask(line, secrets) for line in banner])


@dataclass
class Prepared:
    """What `prepare` found or created, for the banner; whether the table has the landing `payload` column."""

    created: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)
    table_has_payload: bool = False

    def describe(self) -> str:
        parts = []
        if self.created:
            parts.append("created " + ", ".join(self.created))
        if self.found:
            parts.append("already there: " + ", ".join(self.found))
        return "; ".join(parts)


def landing_archive(topic: str, table: str, catalog: str, *, payload: bool) -> dict[str, Any]:
    """The stream's `archive:` mapping for the landing table, checked by the spec's own model (so a topic
    or table name the platform would refuse is refused here, before anything starts)."""
    archive: dict[str, Any] = {"iceberg_table": table}
    if catalog:
        archive["catalog"] = catalog
    if payload:
        archive["payload_column"] = PAYLOAD_COLUMN
    archive["kafka_metadata"] = {"topic": topic}
    try:
        ArchiveSpec.model_validate(archive)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ValueError(f"the landing table's archive spec is refused: {problems}") from None
    return archive


def archive_yaml(archive: dict[str, Any]) -> list[str]:
    """The `archive:` block as YAML lines (flat: a mapping's one level of nesting inline)."""
    lines = ["  archive:"]
    for key, value in archive.items():
        if isinstance(value, dict):
            value = "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
        lines.append(f"    {key}: {value}")
    return lines


def rest_catalog(name: str) -> IcebergCatalogResource:
    """The catalog the sink writes: the named landing catalog, or the platform's; a REST one (the sink's
    plugin has Iceberg's REST client and S3FileIO, no JDBC driver for the embedded SQLite catalog)."""
    catalog = archive_catalog_from_env(name) if name else catalog_from_env(for_dagster=False)
    catalog.check()
    if not catalog.is_rest:
        raise ValueError(
            f"the platform's catalog is not a REST catalog ({settings.CATALOG_URI_ENV} is unset): Iceberg's "
            "sink cannot write the embedded SQLite catalog. Start one with `make rest-catalog` and export "
            f"the variables it prints, or name a landing catalog (CATALOG=NAME, with "
            f"{ARCHIVE_CATALOG_ENV.format(name='<NAME>', setting='URI')})"
        )
    return catalog


def catalog_label(name: str) -> str:
    return f"{name!r} (landing)" if name else "the platform's"


def prepare(
    bootstrap: str,
    topic: str,
    partitions: int,
    catalog: IcebergCatalogResource,
    table: str,
    auto_create: bool,
) -> Prepared:
    """Create what is missing: the topic, the control topic, the namespace, the landing table (unless the
    sink creates it). Nothing existing is replaced: a control topic recreated under a table the sink has
    written would stall its commits (the coordinator skips control events below the offsets it recorded)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    made = Prepared()
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        existing = admin.list_topics(timeout=ADMIN_TIMEOUT_SECONDS).topics
    except Exception as error:
        raise RuntimeError(
            f"no Kafka broker answers at {bootstrap} ({error}): start one with `make kafka`, or give "
            f"--bootstrap (KAFKA_BOOTSTRAP) / {settings.KAFKA_BOOTSTRAP_ENV}"
        ) from None
    for name, count in ((topic, partitions), (control_topic_for(topic), 1)):
        if name in existing:
            made.found.append(f"topic {name}")
        else:
            admin.create_topics([NewTopic(name, count, 1)])[name].result(ADMIN_TIMEOUT_SECONDS)
            made.created.append(f"topic {name} ({count} partition{'s' if count > 1 else ''})")

    from backfill_platform.devtools.generator.iceberg_landing import create_landing_table

    iceberg = catalog.load()
    namespace = table.split(".", 1)[0]
    if iceberg.table_exists(table):
        made.found.append(f"table {table}")
        made.table_has_payload = PAYLOAD_COLUMN in iceberg.load_table(table).schema().column_names
    elif auto_create:
        iceberg.create_namespace_if_not_exists(namespace)
        made.created.append(f"namespace {namespace} (the sink creates the table from the first records)")
    else:
        create_landing_table(iceberg, table)  # the namespace too; it drops only a table that exists
        made.created.append(f"table {table} (landing shape, hourly by {METADATA_FIELD}_timestamp)")
        made.table_has_payload = True
    return made


def sink_config(
    topic: str, table: str, catalog: IcebergCatalogResource, catalog_name: str, bootstrap: str
) -> dict[str, str]:
    """The connector's configuration: the catalog's endpoint, warehouse and S3 settings, and its secrets
    as references to the environment variables holding them (resolved by the worker at task start)."""
    extra: dict[str, str] = {}
    for setting, value in (("TOKEN", catalog.rest_token), ("CREDENTIAL", catalog.rest_credential)):
        if value:
            variable = (
                ARCHIVE_CATALOG_ENV.format(name=catalog_name.upper(), setting=setting)
                if catalog_name
                else getattr(settings, f"CATALOG_{setting}_ENV")
            )
            extra[f"iceberg.catalog.{setting.lower()}"] = env_reference(variable)
    if catalog.s3_path_style is False and catalog.s3_endpoint:
        extra["iceberg.catalog.s3.path-style-access"] = "false"
    # With no warehouse given, a REST server uses its default; S3 is then assumed when an endpoint is set.
    on_s3 = catalog.warehouse.startswith("s3://") or (not catalog.warehouse and bool(catalog.s3_endpoint))
    config = iceberg_sink_config(
        topic,
        table,
        catalog.rest_uri,
        catalog.warehouse,
        catalog.s3_endpoint,
        extra=extra,
        region=catalog.s3_region,
        bootstrap=bootstrap,
        file_io=S3_FILE_IO if on_s3 else "",
    )
    if not catalog.warehouse:
        del config["iceberg.catalog.warehouse"]  # an empty value would be sent as the warehouse's name
    return config


if __name__ == "__main__":
    sys.exit(main())
