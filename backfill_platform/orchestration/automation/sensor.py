"""The automation sensor that evaluates the daily-refresh conditions.

It runs in the user code server (`use_user_code_server=True`): the events' exact partition mapping and
the `SettledDays` condition are custom classes, which the daemon-side asset graph does not have (a custom
mapping is replaced there by Dagster's default day ↔ 24 hours mapping). Stopped by default, so that
`make ui` on the demo launches nothing by itself; start it in the UI (Automation), or set
`BACKFILL_PLATFORM_AUTOMATION=running`.
"""

from __future__ import annotations

from dagster import AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus

from backfill_platform import settings

AUTOMATION_ENV = "BACKFILL_PLATFORM_AUTOMATION"
SENSOR_NAME = "daily_refresh"


def automation_sensor() -> AutomationConditionSensorDefinition:
    running = settings.env_or(AUTOMATION_ENV, "stopped").lower() == "running"
    return AutomationConditionSensorDefinition(
        SENSOR_NAME,
        # Sources included: the archive's observation is requested by its own condition.
        target=AssetSelection.all(include_sources=True),
        use_user_code_server=True,
        default_status=DefaultSensorStatus.RUNNING if running else DefaultSensorStatus.STOPPED,
        description=(
            "Declarative daily refresh: observes the archives, then requests events, the active shadow "
            "and production for settled days within each stream's refresh horizon, and again for the "
            "exact days a late archive file affects."
        ),
    )
