"""An events step told the partitions before its range (`pipeline/run_settings.py`), through Dagster on real
tables: under the tag's old name `backfill_platform/source_days_before` it still ingests the day before,
and says in the run's log that the name is deprecated; told by its config and by the tag two different
counts, the step is refused naming both, before it reads or writes anything. The parser's every rule, no
Spark: unit/validation/test_run_settings.py.

Its own copy of the generated archive under its own stream name, so its tables are no other test's.
"""

from __future__ import annotations

from dagster import DagsterEventType, DagsterInstance, materialize

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.ledger.ledger import latest_ingestions
from backfill_platform.pipeline.names import events_table
from backfill_platform.pipeline.run_settings import OLD_PARTITIONS_BEFORE_TAG, PARTITIONS_BEFORE_TAG
from backfill_platform_tests.support.days import D2, D3
from backfill_platform_tests.support.session import range_tags
from backfill_platform_tests.support.streams import stream_copy


def test_the_old_tag_name_ingests_the_day_before_and_is_logged_deprecated(
    truth, data_dir, spark, spark_resource, playback
):
    stream = stream_copy(playback, data_dir, "playback_before_alias")
    asset = build_events_asset(stream)
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            [asset],
            resources={"spark": spark_resource},
            tags=range_tags(D3, D3, **{OLD_PARTITIONS_BEFORE_TAG: f"{stream.name}=1"}),
            instance=instance,
        )
        logged = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert result.success
    # The day before the range was ingested by this very run, beside the range's own day.
    ingested = latest_ingestions(spark, stream.name, [D2, D3])
    assert {day: row["run_id"] for day, row in ingested.items()} == {
        D2.isoformat(): result.run_id,
        D3.isoformat(): result.run_id,
    }
    materialized = {
        m.event_specific_data.materialization.partition for m in result.get_asset_materialization_events()
    }
    assert materialized == {D2.isoformat(), D3.isoformat()}
    assert any(
        f"run tag {OLD_PARTITIONS_BEFORE_TAG} is deprecated" in message and PARTITIONS_BEFORE_TAG in message
        for message in logged
    ), logged

    # Told 2 by the tag and 1 by the asset's config: refused, naming both, and nothing is written.
    snapshot = current_snapshot_id(spark, events_table(spark, stream))
    refused = materialize(
        [asset],
        resources={"spark": spark_resource},
        run_config={"ops": {asset.op.name: {"config": {"partitions_before": 1}}}},
        tags=range_tags(D3, D3, **{PARTITIONS_BEFORE_TAG: f"{stream.name}=2"}),
        raise_on_error=False,
    )
    failures = [e.step_failure_data.error.to_string() for e in refused.all_events if e.is_step_failure]
    assert len(failures) == 1
    assert (
        f"run tag {PARTITIONS_BEFORE_TAG} ({stream.name}) says 2 and the asset's config says 1: give one, "
        "or the same value in both"
    ) in failures[0]
    assert not any(e.event_type == DagsterEventType.ASSET_MATERIALIZATION for e in refused.all_events)
    assert current_snapshot_id(spark, events_table(spark, stream)) == snapshot
    assert latest_ingestions(spark, stream.name, [D2, D3]) == ingested
