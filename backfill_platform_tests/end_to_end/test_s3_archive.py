"""Archives in S3 (`archive.location: s3://bucket/prefix`), on a real S3 endpoint: moto's server.

A small generated archive (with one truncated gzip object) is uploaded to a bucket keeping its layout.
The same archive is declared twice, `s3://…` and a local folder; a 3-day validated backfill (events →
shadow → checks → production) of each gives equal events, quarantine and production rows. A missing
bucket, a missing object, an access-denied prefix and a truncated object each give a clear error naming
the URI, or a quarantine record: never a silent gap.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dagster import materialize

from backfill_platform import settings
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.pipeline.archive.listing import list_files, manifest_fingerprint
from backfill_platform.pipeline.archive.opening import ArchiveReadError
from backfill_platform.pipeline.archive.readers import read_lines
from backfill_platform.pipeline.archive.records import iter_lines
from backfill_platform.pipeline.archive.s3 import S3Archive
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.pipeline.names import events_table, production_table, quarantine_table
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.specs.archive_location import ArchiveSpec
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.moto import MotoServer, aws
from backfill_platform_tests.support.session import START, range_tags

# Archives in moto's buckets: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS).
pytestmark = pytest.mark.usefixtures("s3_archive_buckets")

BUCKET = "firehose-archive"
PREFIX = "playback/firehose"
D1, D3 = START, START + timedelta(days=2)
WINDOW = (midnight(D1), midnight(D3))  # two event-time days: what a run of D1..D2 reads
TRUNCATED = "truncated.jsonl.gz"  # added to the first hour folder of the second day


def stream_spec(name: str, location: str) -> StreamSpec:
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"]["location"] = location
    return StreamSpec.model_validate(raw)


def views_spec(name: str, stream: str) -> DatasetSpec:
    raw = demo_spec_data("views_per_title")
    raw["name"], raw["source_stream"] = name, stream
    return DatasetSpec.model_validate(raw)


@pytest.fixture(scope="module")
def archives(data_dir: Path, moto: MotoServer):
    """The same small archive (4 days x 400 events, one truncated gzip object) locally and in S3."""
    root = data_dir / "archive" / "s3cmp_local"
    shutil.rmtree(root, ignore_errors=True)
    truth = generate_playback_archive(root, GeneratorConfig(start=START, days=4, events_per_day=400, seed=5))
    first = sorted((root / f"{D1 + timedelta(days=1):%Y/%m/%d}").rglob("*.gz"))[0]
    whole = first.read_bytes()
    (first.parent / TRUNCATED).write_bytes(whole[: len(whole) // 2])
    assert moto.upload(root, BUCKET, PREFIX) == truth["totals"]["files"] + 2  # + truncated + _truth.json
    local = stream_spec("s3cmp_local", "archive/s3cmp_local")
    remote = stream_spec("s3cmp_remote", f"s3://{BUCKET}/{PREFIX}/")
    return local, remote, str((first.parent / TRUNCATED).relative_to(root))


def rows(spark, table: str, order: list[str]) -> list[tuple]:
    return [tuple(r) for r in spark.table(table).orderBy(*order).collect()]


def test_s3_locations_are_validated():
    assert ArchiveSpec(location="s3://my-bucket/a/b/").s3 == ("my-bucket", "a/b")
    assert ArchiveSpec(location="s3://my-bucket").s3 == ("my-bucket", "")
    # no confinement to the data roots for S3, unchanged for local paths
    assert ArchiveSpec(location="s3://my.bucket-1/etc").s3 == ("my.bucket-1", "etc")
    for bad, message in [
        ("s3://My_Bucket/x", "not a valid S3 bucket name"),
        ("s3://ab/x", "not a valid S3 bucket name"),
        ("s3://192.168.1.1/x", "not a valid S3 bucket name"),
        ("s3://bucket/a//b", "empty, '.' or '..' segment"),
        ("s3://bucket/a/../b", "empty, '.' or '..' segment"),
        ("s3a://bucket/x", "not s3a://"),
        ("/etc", "outside the configured data roots"),
    ]:
        with pytest.raises(ValueError, match=message):
            ArchiveSpec(location=bad)


def test_listing_is_per_hour_paginated_and_fingerprinted_by_etag(archives, moto, spark):
    local, remote, _ = archives
    with aws(moto, spark):
        s3 = archive_for(remote)
        assert isinstance(s3, S3Archive)
        read = ReadWindow.of(remote, *WINDOW)
        window = (read.low, read.high)
        s3_files, local_files = list_files(s3, *window), list_files(archive_for(local), *window)
        assert [(f.name, f.size, f.ingestion_hour) for f in s3_files] == [
            (f.name, f.size, f.ingestion_hour) for f in local_files
        ]
        assert s3_files and all(f.path.startswith(f"s3://{BUCKET}/{PREFIX}/") and f.etag for f in s3_files)
        # Paginated, and bounded to the hour's prefix: 5 objects in pages of 2 are 3 calls on that prefix.
        client = moto.client("s3")
        crowded = datetime(2026, 9, 1, 0, tzinfo=UTC)
        folder = f"{PREFIX}/{crowded:%Y/%m/%d/%H}"
        for i in range(5):
            client.put_object(Bucket=BUCKET, Key=f"{folder}/part-{i:04d}.jsonl", Body=b"{}\n")
        paged = dataclasses.replace(s3, page_size=2)
        prefixes = []
        paged.client.meta.events.register(
            "before-parameter-build.s3.ListObjectsV2", lambda params, **_: prefixes.append(params["Prefix"])
        )
        assert len(paged.list_hour(crowded)) == 5
        assert prefixes == [f"{folder}/"] * 3
        # The data version of an hour follows the objects' content (ETag), not their upload time.
        hour = s3_files[0].ingestion_hour
        before = manifest_fingerprint(s3.list_hour(hour))
        key = s3_files[0].path.removeprefix(f"s3://{BUCKET}/")
        body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        client.put_object(Bucket=BUCKET, Key=key, Body=body)
        assert manifest_fingerprint(s3.list_hour(hour)) == before
        client.put_object(Bucket=BUCKET, Key=key, Body=body[:-1] + bytes([body[-1] ^ 1]))
        assert manifest_fingerprint(s3.list_hour(hour)) != before
        client.put_object(Bucket=BUCKET, Key=key, Body=body)
        # Objects no hour lists are reported with their line counts, like local files.
        client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/stray/notes.jsonl", Body=b'{"a": 1}\n{"a": 2}\n')
        unlisted = {f.name: f for f in s3.unlisted_files(window[0])}
        assert unlisted["stray/notes.jsonl"].lines == 2
        assert "outside the hour layout" in unlisted["stray/notes.jsonl"].why
        assert sum(1 for name in unlisted if name.startswith("2026/09/01/00/")) == 5  # before the window
        for i in range(5):
            client.delete_object(Bucket=BUCKET, Key=f"{folder}/part-{i:04d}.jsonl")
        client.delete_object(Bucket=BUCKET, Key=f"{PREFIX}/stray/notes.jsonl")


def test_a_truncated_object_reads_like_the_local_file(archives, moto, spark, data_dir):
    name = archives[2]
    with aws(moto, spark):
        from_s3 = list(iter_lines(f"s3://{BUCKET}/{PREFIX}/{name}", 1 << 20))
    from_disk = list(iter_lines(str(data_dir / "archive" / "s3cmp_local" / name), 1 << 20))
    assert from_s3 == from_disk
    assert from_s3[-1][3] == "unreadable_file" and "EOFError" in from_s3[-1][4]


def test_a_backfill_from_s3_equals_the_same_archive_read_locally(archives, moto, spark, spark_resource):
    seconds = {}
    tables = {}
    for stream in archives[:2]:
        views = views_spec(f"{stream.name}_views", stream.name)
        assets = [
            build_events_asset(stream),
            build_shadow_asset(views, [stream], views.active_version),
            build_production_asset(views, [stream]),
        ]
        began = time.monotonic()
        with aws(moto, spark):
            result = materialize(
                assets, resources={"spark": spark_resource}, tags=range_tags(D1, D3), raise_on_error=False
            )
        seconds[stream.name] = time.monotonic() - began
        assert result.success, stream.name
        failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
        assert not failed, [(e.check_name, e.partition) for e in failed]
        tables[stream.name] = (
            rows(spark, events_table(spark, stream), ["event_id"]),
            rows(spark, quarantine_table(spark, stream), ["_source_file", "_line_number"]),
            rows(spark, production_table(spark, views), ["event_date", "event_hour", "title_id"]),
        )
    (local_events, local_quarantine, local_production), (events, quarantine, production) = tables.values()
    assert events == local_events and len(events) > 800
    assert quarantine == local_quarantine
    assert production == local_production and production
    # quarantine columns: line, _source_file, _line_number, reason, detail, ...
    unreadable = [q for q in quarantine if q[3] == "unreadable_file"]
    assert [q[1] for q in unreadable] == [archives[2]], "the truncated object is quarantined"
    print(f"\n3-day validated backfill: {seconds}")


def test_a_missing_bucket_or_object_fails_naming_the_uri(archives, moto, spark):
    remote = archives[1]
    missing = stream_spec("s3cmp_missing", "s3://no-such-bucket-here/playback")
    with aws(moto, spark):
        with pytest.raises(ArchiveReadError, match=r"s3://no-such-bucket-here/playback/2026/.*NoSuchBucket"):
            ingest_window(spark, missing, archive_for(missing), ReadPlan.for_range(missing, *WINDOW))
        # An object deleted between the listing and the read: the Spark task fails naming it.
        client = moto.client("s3")
        files = list_files(archive_for(remote), WINDOW[0], WINDOW[0] + timedelta(hours=2))
        gone = files[0].path.removeprefix(f"s3://{BUCKET}/")
        body = client.get_object(Bucket=BUCKET, Key=gone)["Body"].read()
        client.delete_object(Bucket=BUCKET, Key=gone)
        try:
            with pytest.raises(Exception, match=rf"cannot read {files[0].path}: NoSuchKey"):
                read_lines(spark, files).collect()
        finally:
            client.put_object(Bucket=BUCKET, Key=gone, Body=body)


def _reset_auth(moto: MotoServer, count: str) -> str:
    """Turn moto's IAM enforcement on ("0": every request is checked) or off ("inf"); the previous value."""
    request = urllib.request.Request(
        f"{moto.endpoint_url}/moto-api/reset-auth",
        data=count.encode(),
        method="POST",
        headers={"Content-Type": "text/plain"},  # not a form: the server reads the raw body
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]


def test_access_denied_fails_naming_the_uri(archives, moto, spark):
    """A reader allowed to list the archive but denied `GetObject` under one prefix (an IAM policy, which
    moto's server enforces once auth is on), and denied listing another bucket."""
    remote = archives[1]
    client = moto.client("s3")
    denied_prefix = f"{PREFIX}-denied"
    client.create_bucket(Bucket="firehose-private")
    for key in [f"{denied_prefix}/2026/10/01/00/a.jsonl", "playback/2026/10/01/00/a.jsonl"]:
        bucket = BUCKET if key.startswith(denied_prefix) else "firehose-private"
        client.put_object(Bucket=bucket, Key=key, Body=b'{"event_id": "x"}\n')
    iam = moto.client("iam")
    iam.create_user(UserName="archive-reader")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
            {
                "Effect": "Deny",
                "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{BUCKET}/{denied_prefix}/*",
            },
            {"Effect": "Deny", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::firehose-private"},
        ],
    }
    iam.put_user_policy(UserName="archive-reader", PolicyName="archive", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="archive-reader")["AccessKey"]
    credentials = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
    denied_read = stream_spec("s3cmp_denied", f"s3://{BUCKET}/{denied_prefix}")
    denied_list = stream_spec("s3cmp_private", "s3://firehose-private/playback")
    hour = datetime(2026, 10, 1, 0, tzinfo=UTC)
    previous = _reset_auth(moto, "0")
    try:
        with aws(moto, spark, **credentials):
            files = archive_for(denied_read).list_hour(hour)
            assert [f.name for f in files] == ["2026/10/01/00/a.jsonl"]  # listing is allowed
            with pytest.raises(Exception, match=rf"cannot read s3://{BUCKET}/{denied_prefix}/.*AccessDenied"):
                read_lines(spark, files).collect()
            with pytest.raises(
                ArchiveReadError, match=r"cannot list s3://firehose-private/playback/.*AccessDenied"
            ):
                archive_for(denied_list).list_hour(hour)
            # The allowed archive is still read with the same credentials.
            assert archive_for(remote).list_hour(hour)
    finally:
        _reset_auth(moto, previous)
    # An unquoted "inf" (no limit) restores a server without auth.
    assert client.list_objects_v2(Bucket=BUCKET, Prefix=denied_prefix)["KeyCount"] == 1


def test_the_archive_asset_observes_s3_hours(archives, moto, spark, monkeypatch):
    """The observable archive gives each ingestion hour in S3 a data version (keys, sizes, ETags)."""
    # A first observation lists every hour since the first partition (one call per hour): up to day 5.
    monkeypatch.setattr(settings, "now", lambda: datetime(2026, 10, 5, 12, tzinfo=UTC))
    from dagster import DagsterInstance
    from dagster._core.definitions.observe import observe

    from backfill_platform.pipeline.archive.assets import build_archive_asset

    versions = {}
    with aws(moto, spark):
        for stream in archives[:2]:
            result = observe([build_archive_asset(stream)], instance=DagsterInstance.ephemeral())
            assert result.success
            observations = [
                e.asset_observation_data.asset_observation for e in result.get_asset_observation_events()
            ]
            versions[stream.name] = {o.partition: o.tags.get("dagster/data_version") for o in observations}
        local, remote = (versions[stream.name] for stream in archives[:2])
        assert remote.keys() == local.keys() and len(remote) > 90 and all(remote.values())
        hour = datetime.strptime(archives[2].rpartition("/")[0], "%Y/%m/%d/%H").replace(tzinfo=UTC)
        files = archive_for(archives[1]).list_hour(hour)
        assert remote[f"{hour:%Y-%m-%d-%H:%M}"] == manifest_fingerprint(files)
