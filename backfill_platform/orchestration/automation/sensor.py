"""The automation sensor that evaluates the daily-refresh conditions.

It runs in the user code server (`use_user_code_server=True`): the events' exact partition mapping and
the `SettledDays` condition are custom classes, which the daemon-side asset graph does not have (a custom
mapping is replaced there by Dagster's default day ↔ 24 hours mapping). Stopped by default, so that
`make ui` on the demo launches nothing by itself; start it in the UI (Automation), or set
`BACKFILL_PLATFORM_AUTOMATION=running`. How often it evaluates: `BACKFILL_PLATFORM_REFRESH_INTERVAL_SECONDS`
(default 30 s, Dagster's default for sensors; a daily refresh rarely needs it sooner, while a team watching a
late file land, or a test, may want 5 s).
"""

from __future__ import annotations

from dagster import AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus

from backfill_platform import settings

AUTOMATION_ENV = "BACKFILL_PLATFORM_AUTOMATION"
INTERVAL_ENV = "BACKFILL_PLATFORM_REFRESH_INTERVAL_SECONDS"
DEFAULT_INTERVAL_SECONDS = 30
SENSOR_NAME = "daily_refresh"


def automation_sensor() -> AutomationConditionSensorDefinition:
    running = settings.env_or(AUTOMATION_ENV, "stopped").lower() == "running"
    interval = refresh_interval_seconds()
    return AutomationConditionSensorDefinition(
        SENSOR_NAME,
        # Sources included: the archive's observation is requested by its own condition.
        target=AssetSelection.all(include_sources=True),
        use_user_code_server=True,
        minimum_interval_seconds=interval,
        default_status=DefaultSensorStatus.RUNNING if running else DefaultSensorStatus.STOPPED,
        description=(
            "Declarative daily refresh: observes the archives, then requests events, the active shadow "
            "and production for settled days within each stream's refresh horizon, and again for the "
            "exact days a late archive file affects."
        ),
    )


def refresh_interval_seconds() -> int:
    """The sensor's minimum interval from `BACKFILL_PLATFORM_REFRESH_INTERVAL_SECONDS`: a whole number of
    seconds, at least 1 (the daemon looks at sensors every 5 s, so less than 5 acts as 5)."""
    text = settings.env_or(INTERVAL_ENV, str(DEFAULT_INTERVAL_SECONDS))
    if not (text.isascii() and text.isdecimal()) or int(text) < 1:
        raise ValueError(f"{INTERVAL_ENV} must be a whole number of seconds, at least 1, not {text!r}")
    return int(text)
