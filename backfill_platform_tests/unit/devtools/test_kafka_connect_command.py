"""`make kafka-connect`'s pure parts: the landing spec it prints, the connector configuration it gives, the
catalogs it refuses. The command itself runs in `end_to_end/test_kafka_connect_target.py`."""

from __future__ import annotations

import pytest
import yaml

from backfill_platform import settings
from backfill_platform.devtools.kafka_connect.__main__ import (
    archive_yaml,
    landing_archive,
    rest_catalog,
    sink_config,
)
from backfill_platform.lakehouse.resources import IcebergCatalogResource
from backfill_platform.specs.archive_location import ArchiveSpec

TOKEN = "tok-8d1e5a0c"


def test_the_printed_archive_block_is_the_spec_it_validated():
    archive = landing_archive("playback", "raw_landing.playback", "landing", payload=True)
    parsed = yaml.safe_load("\n".join(archive_yaml(archive)))["archive"]
    assert parsed == {
        "iceberg_table": "raw_landing.playback",
        "catalog": "landing",
        "payload_column": "payload",
        "kafka_metadata": {"topic": "playback"},
    }
    assert ArchiveSpec.model_validate(parsed).kafka_offsets.topic == "playback"
    assert "payload_column" not in landing_archive("t", "ns.t", "", payload=False)


@pytest.mark.parametrize(
    ("topic", "table", "named"),
    [
        ("playback", "raw.playback", "'raw'"),
        ("play back", "ns.t", "kafka_metadata"),
        ("t", "t", "iceberg_table"),
    ],
)
def test_names_the_platform_would_refuse_are_refused_before_anything_starts(topic, table, named):
    with pytest.raises(ValueError, match=named):
        landing_archive(topic, table, "", payload=True)


def test_the_catalog_token_reaches_the_connector_as_a_reference_never_its_value():
    catalog = IcebergCatalogResource(
        rest_uri="http://127.0.0.1:8181",
        rest_token=TOKEN,
        warehouse="s3://lake/wh",
        s3_endpoint="http://127.0.0.1:5000",
        s3_region="eu-west-1",
        s3_path_style=True,
    )
    config = sink_config("t", "ns.t", catalog, "", "127.0.0.1:9092")
    assert config["iceberg.catalog.token"] == "${env:BACKFILL_PLATFORM_CATALOG_TOKEN}"
    assert TOKEN not in str(config)
    assert config["iceberg.catalog.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert config["iceberg.catalog.client.region"] == "eu-west-1"
    named = sink_config("t", "ns.t", catalog, "landing", "127.0.0.1:9092")
    assert named["iceberg.catalog.token"] == "${env:BACKFILL_PLATFORM_ARCHIVE_CATALOG_LANDING_TOKEN}"


def test_a_local_warehouse_keeps_the_catalogs_file_io_and_no_warehouse_means_the_servers():
    local = sink_config(
        "t", "ns.t", IcebergCatalogResource(rest_uri="http://h", warehouse="file:///w"), "", "b"
    )
    assert "iceberg.catalog.io-impl" not in local and local["iceberg.catalog.warehouse"] == "file:///w"
    default = sink_config("t", "ns.t", IcebergCatalogResource(rest_uri="http://h"), "", "b")
    assert "iceberg.catalog.warehouse" not in default


def test_the_embedded_sqlite_catalog_is_refused_naming_make_rest_catalog(monkeypatch, tmp_path):
    monkeypatch.delenv(settings.CATALOG_URI_ENV, raising=False)
    monkeypatch.delenv(settings.CATALOG_JDBC_URI_ENV, raising=False)
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(ValueError, match="make rest-catalog"):
        rest_catalog("")
    with pytest.raises(ValueError, match="BACKFILL_PLATFORM_ARCHIVE_CATALOG_NOPE_URI"):
        rest_catalog("nope")
