"""The UI tells the truth: what a real `dagster dev` shows about each day of a range backfill.

Two backfills of 2026-10-02..2026-10-04 (events → shadow v2 → production), each launched through
GraphQL as the UI does and run as one run by the daemon:

- on `playback_gap_ui`, whose archive lacks the ingestion hour 2026-10-03 05:00: days 2026-10-02 and
  2026-10-03 fail the blocking `settled` check, so the backfill ends COMPLETED_FAILED, only 2026-10-04's
  events are materialized and nothing is promoted;
- on `playback` / `views_per_title` (the session's `views_backfill`): COMPLETED_SUCCESS, with every
  check recorded per day with that day's numbers.

The GraphQL answers the UI renders are checked against the generator's truth, then a headless Chromium
opens the pages a user would (lineage, one day of the shadow, its checks, a failed day of the gap
stream) and the screenshots are kept in the test's temporary folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from backfill_platform_tests.support.dagster_dev import (
    GAP_DATASET,
    GAP_STREAM,
    JOIN_BACKFILL_ASSETS,
    VIEWS_BACKFILL_DAYS,
    DagsterDev,
)
from backfill_platform_tests.support.dagster_graphql import (
    asset_statuses,
    check_executions,
    launch_backfill,
    materializations,
    metadata_values,
    wait_for_backfill,
)
from backfill_platform_tests.support.datasets import production
from backfill_platform_tests.support.processes import wait_until

pytestmark = pytest.mark.other_writers

DAYS = VIEWS_BACKFILL_DAYS
D2, D3, D4 = DAYS
MISSING_HOURS = "2026-10-03 05:00 to 05:59"
GAP_EVENTS = ["raw", f"{GAP_STREAM}_events"]
GAP_SHADOW = ["shadow", f"{GAP_DATASET}__v2"]
GAP_PRODUCTION = production(GAP_DATASET).path
EVENTS = ["raw", "playback_events"]
SHADOW = ["shadow", "views_per_title__v2"]
PRODUCTION = production("views_per_title").path
EVENTS_CHECKS = ["quarantine_ratio", "reconciliation", "records_present", "schema", "settled"]
SHADOW_CHECKS = [
    "checksums_per_bucket",
    "divergence_vs_production",
    "erasure_honored",
    "events_validated",
    "row_counts_per_bucket",
    "schema",
]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PAGE_TIMEOUT_MS = 60_000
VIEWPORT = {"width": 1600, "height": 1000}
LINEAGE_VIEWPORT = {"width": 1600, "height": 1500}


def only_run(backfill: dict) -> dict:
    assert len(backfill["runs"]) == 1, backfill["runs"]
    return backfill["runs"][0]


def executions_by_day(
    dev: DagsterDev, asset: list[str], check: str, run_id: str, days: list[str] = DAYS
) -> dict[str, dict]:
    """Day -> the check's one execution of that day in `run_id`, with its metadata as plain values."""
    found = {}
    for day in days:
        executions = [e for e in check_executions(dev, asset, check, day) if e["runId"] == run_id]
        assert len(executions) == 1, (asset, check, day, executions)
        execution = executions[0]
        assert execution["partition"] == day == execution["evaluation"]["partition"], execution
        found[day] = {**execution, "metadata": metadata_values(execution["evaluation"]["metadataEntries"])}
    return found


def materialized_by_day(dev: DagsterDev, asset: list[str], run_id: str) -> dict[str, dict]:
    """Day -> metadata of the run's materialization of that day (only the days it materialized)."""
    events = [m for m in materializations(dev, asset, DAYS) if m["runId"] == run_id]
    assert len({m["partition"] for m in events}) == len(events), events
    return {m["partition"]: metadata_values(m["metadataEntries"]) for m in events}


@pytest.fixture(scope="module")
def gap_backfill(dagster_dev: DagsterDev) -> dict:
    backfill_id = launch_backfill(
        dagster_dev,
        [GAP_EVENTS, GAP_SHADOW, GAP_PRODUCTION],
        DAYS,
        title=f"{GAP_DATASET} v2 over a lost archive hour",
    )
    return wait_for_backfill(dagster_dev, backfill_id)


def test_a_range_with_a_lost_hour_ends_failed_and_names_the_days(gap_backfill, dagster_dev, truth):
    # Not a green backfill: the run failed on the blocking `settled` check.
    assert gap_backfill["status"] == "COMPLETED_FAILED", f"{gap_backfill}\n{dagster_dev.log_tail()}"
    run = only_run(gap_backfill)
    assert run["status"] == "FAILURE", run

    # Per asset, what the backfill page counts: the settled day only; nothing shadowed or promoted.
    counts = {
        key: (s["numPartitionsTargeted"], s["numPartitionsMaterialized"], s["numPartitionsFailed"])
        for key, s in asset_statuses(gap_backfill).items()
    }
    assert counts["/".join(GAP_EVENTS)] == (3, 1, 2), counts
    assert counts["/".join(GAP_SHADOW)][1] == 0, counts
    assert counts["/".join(GAP_PRODUCTION)][1] == 0, counts

    # The `settled` verdict of each day, with that day's numbers: the lost hour is named.
    settled = executions_by_day(dagster_dev, GAP_EVENTS, "settled", run["runId"])
    assert {day: e["status"] for day, e in settled.items()} == {
        D2: "FAILED",
        D3: "FAILED",
        D4: "SUCCEEDED",
    }
    for day in (D2, D3):
        assert settled[day]["metadata"]["missing_hours"] == MISSING_HOURS, settled[day]
        assert MISSING_HOURS in settled[day]["metadata"]["problem"], settled[day]
    assert settled[D4]["metadata"]["missing_hours"] == "none", settled[D4]

    # Only the settled day is materialized, with its own figures: the generator's records of that day.
    events = materialized_by_day(dagster_dev, GAP_EVENTS, run["runId"])
    assert sorted(events) == [D4], events
    assert events[D4]["records"] == truth["partitions"][D4]["records"], events[D4]
    assert events[D4]["checks_passed"] is True, events[D4]
    assert materialized_by_day(dagster_dev, GAP_SHADOW, run["runId"]) == {}
    assert materialized_by_day(dagster_dev, GAP_PRODUCTION, run["runId"]) == {}


def test_a_clean_range_records_each_days_own_checks_and_figures(views_backfill, dagster_dev, truth):
    assert views_backfill["status"] == "COMPLETED_SUCCESS", f"{views_backfill}\n{dagster_dev.log_tail()}"
    run = only_run(views_backfill)
    counts = {
        key: (s["numPartitionsMaterialized"], s["numPartitionsFailed"])
        for key, s in asset_statuses(views_backfill).items()
    }
    expected = {"/".join(asset): (3, 0) for asset in (EVENTS, SHADOW, PRODUCTION, *JOIN_BACKFILL_ASSETS)}
    # The impressions of the day before the range, which the join's lookback reads, ingested by the run.
    expected["raw/impressions_events"] = (4, 0)
    assert counts == expected, counts

    # Each day's events materialization carries that day's records, not the range's total.
    events = materialized_by_day(dagster_dev, EVENTS, run["runId"])
    assert sorted(events) == DAYS
    records = {day: events[day]["records"] for day in DAYS}
    assert records == {day: truth["partitions"][day]["records"] for day in DAYS}
    assert len(set(records.values())) == len(DAYS), records

    # Every check of the events and of the shadow passed on every day, recorded per day.
    for asset, checks in ((EVENTS, EVENTS_CHECKS), (SHADOW, SHADOW_CHECKS)):
        for check in checks:
            executions = executions_by_day(dagster_dev, asset, check, run["runId"])
            assert {day: e["status"] for day, e in executions.items()} == dict.fromkeys(DAYS, "SUCCEEDED"), (
                asset,
                check,
            )

    # `row_counts_per_bucket` holds each day's own rows, which are that day's shadow materialization's.
    row_counts = executions_by_day(dagster_dev, SHADOW, "row_counts_per_bucket", run["runId"])
    shadow = materialized_by_day(dagster_dev, SHADOW, run["runId"])
    rows = {day: row_counts[day]["metadata"]["rows"] for day in DAYS}
    assert len(set(rows.values())) == len(DAYS), rows
    for day in DAYS:
        assert rows[day] == row_counts[day]["metadata"]["expected_rows"] > 0, row_counts[day]
        assert shadow[day]["rows"] == rows[day], (day, shadow[day])
        assert shadow[day]["checks_passed"] is True, (day, shadow[day])


# --- what a person sees: headless Chromium on the webserver ------------------------------------------


@pytest.fixture(scope="module")
def page(dagster_dev: DagsterDev) -> Iterator:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make system-deps` installs Debian's chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            tab = context.new_page()
            tab.set_default_timeout(PAGE_TIMEOUT_MS)
            yield tab
        finally:
            browser.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui_screenshots")


def open_page(page, dev: DagsterDev, path: str, ready_text: str) -> None:
    page.goto(dev.base_url + path)
    page.get_by_text(ready_text, exact=True).first.wait_for()


def wait_for_dialog(page):
    """The open dialog, once its opening animation is over (so a screenshot shows it opaque)."""
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    page.wait_for_function(
        "() => !document.querySelector('.bp5-overlay-appear-active, .bp5-overlay-enter-active')"
    )
    return dialog


def screenshot_when_still(page, path: Path, attempts: int = 20) -> None:
    """A screenshot once two in a row are identical (the graph's zoom and fade animations are over)."""
    previous = page.screenshot()
    for _ in range(attempts):
        page.wait_for_timeout(250)
        current = page.screenshot()
        if current == previous:
            break
        previous = current
    path.write_bytes(previous)


GRAPH_NODES_JS = """() => [...document.querySelectorAll('[class*=AssetNode_assetName]')].map(e => {
    const box = e.closest('[class*=AssetNodeBox], [class*=assetNodeBox]');
    return [e.innerText.trim(), box ? box.getAttribute('style') || '' : ''];
})"""


def shown_as(label: str, name: str) -> bool:
    """Whether a node label is `name`, maybe middle-truncated ('views_per_tit…__v2')."""
    if "…" not in label:
        return label == name
    head, tail = label.split("…", 1)
    return len(head) + len(tail) < len(name) and name.startswith(head) and name.endswith(tail)


def graph_nodes(page, names: list[str], timeout_s: float = 60) -> dict[str, str]:
    """Name -> style of the asset graph's node of each of `names`, once every one is drawn with its status."""
    labels: list = []
    found: dict[str, str] = {}

    def drawn() -> dict[str, str] | None:
        nonlocal labels, found
        labels = page.evaluate(GRAPH_NODES_JS)
        found = {name: style for name in names for label, style in labels if shown_as(label, name)}
        # Until every node is drawn with its status (drawn first in a neutral 'light' colour).
        if len(found) == len(names) and not any("background-light" in style for style in found.values()):
            return found
        return None

    return wait_until(
        drawn,
        timeout=timeout_s,
        what=lambda: f"asset graph nodes missing: {sorted(set(names) - set(found))}; shown: {labels}",
    )


def node_pattern(label: str, checks: str, partitions: str) -> str:
    """A lineage node's text: its name, latest event, 'Asset checks' and 'Partitions' lines (regexes)."""
    return rf"^{re.escape(label)}\nLatest event\n(?:.*\n)?Asset checks\n{checks}\nPartitions\n{partitions}$"


def wait_for_text(page, *patterns: str, timeout_s: float = 60) -> str:
    """The page's text once every regex (multiline) is found in it; fails naming those never shown."""
    text = ""
    missing: list[str] = []

    def shown() -> str | None:
        nonlocal text, missing
        text = page.inner_text("body")
        missing = [p for p in patterns if not re.search(p, text, re.MULTILINE)]
        return None if missing else text

    return wait_until(
        shown, timeout=timeout_s, what=lambda: f"{page.url} never showed {missing}:\n{text[:6000]}"
    )


def test_the_ui_shows_each_day_of_a_range_backfill(
    gap_backfill, views_backfill, dagster_dev, page, screenshots
):
    assert views_backfill["status"] == "COMPLETED_SUCCESS"
    assert gap_backfill["status"] == "COMPLETED_FAILED"
    run_id = only_run(views_backfill)["runId"]
    shadow_d3 = materialized_by_day(dagster_dev, SHADOW, run_id)[D3]
    row_counts_d3 = executions_by_day(dagster_dev, SHADOW, "row_counts_per_bucket", run_id, [D3])[D3]

    # The global lineage, every group expanded (from the graph's settings menu): every asset node, the
    # gap stream's events, shadow and production drawn as failed (red), the playback ones not.
    page.set_viewport_size(LINEAGE_VIEWPORT)  # room for the whole expanded graph
    open_page(page, dagster_dev, "/asset-groups", "Global asset lineage")
    page.locator("button:has([aria-label=settings])").filter(has_not_text="Settings").click()
    page.get_by_role("menuitem", name=re.compile("Expand all groups")).click()
    page.keyboard.press("Escape")
    assets = [EVENTS, SHADOW, PRODUCTION, GAP_EVENTS, GAP_SHADOW, GAP_PRODUCTION]
    nodes = graph_nodes(page, [asset[-1] for asset in assets])
    screenshot_when_still(page, screenshots / "lineage.png")
    page.set_viewport_size(VIEWPORT)
    if all("--minimal-bg" in style for style in nodes.values()):  # zoomed out: nodes show name and colour
        red = {name for name, style in nodes.items() if "--minimal-bg: var(--color-background-red)" in style}
        # The gap's events failed and its shadow was planned in the failed run: both red. Its production
        # was drawn red in some runs and grey ("missing") in others, depending on when the partition
        # status cache caught up; its lineage below is polled until it shows the 3 failed days.
        assert {GAP_EVENTS[-1], GAP_SHADOW[-1]} <= red, nodes
        assert not red & {EVENTS[-1], SHADOW[-1], PRODUCTION[-1]}, nodes

    # Each production asset's upstream lineage: what every node says about its partitions and checks.
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(GAP_PRODUCTION)}?view=lineage&lineageScope=upstream&lineageDepth=3",
        "Upstream",
    )
    wait_for_text(
        page,
        node_pattern(GAP_EVENTS[-1], re.escape("4 / 5 Passed"), re.escape("1% filled (2 failed)")),
        node_pattern(GAP_SHADOW[-1], r"0 / 6 Passed", re.escape("0% filled (3 failed)")),
        node_pattern(GAP_PRODUCTION[-1], r"0 / 1 Passed", re.escape("0% filled (3 failed)")),
    )
    screenshot_when_still(page, screenshots / "gap_lineage.png")
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(PRODUCTION)}?view=lineage&lineageScope=upstream&lineageDepth=3",
        "Upstream",
    )
    wait_for_text(
        page,
        node_pattern(EVENTS[-1], re.escape("5 / 5 Passed"), r"\d+% filled"),
        node_pattern(SHADOW[-1], re.escape("6 / 6 Passed"), r"\d+% filled"),
        node_pattern(PRODUCTION[-1], re.escape("1 / 1 Passed"), r"\d+% filled"),
    )
    screenshot_when_still(page, screenshots / "views_lineage.png")

    # One day of the shadow: its materialization and that day's own figures.
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(SHADOW)}?view=partitions&partition={D3}",
        "Latest materialization",
    )
    wait_for_text(
        page,
        rf"^{D3}\nMaterialized$",
        *(rf"^{label}\s+{shadow_d3[label]}$" for label in ("rows", "sum_views", "sum_watch_seconds")),
        rf"^diverging_rows\s+{shadow_d3['diverging_rows']}$",
        r"^checks_passed\s+true$",
        r"^failed_checks\s+none$",
    )
    screenshot_when_still(page, screenshots / "shadow_day.png")

    # Its checks: every one listed as succeeded; the execution history has one verdict per day, and
    # that day's numbers behind it.
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(SHADOW)}?view=checks&checkDetail=row_counts_per_bucket",
        "Execution history",
    )
    wait_for_text(page, *(rf"^{check}\nSucceeded$" for check in SHADOW_CHECKS))
    page.get_by_text("Execution history", exact=True).click()
    for day in DAYS:
        row = page.locator("tr", has_text=day)
        row.wait_for()
        assert re.match(r"^Passed\s", row.inner_text()), (day, row.inner_text())
    page.locator("tr", has_text=D3).locator("button").last.click()
    dialog = wait_for_dialog(page)
    screenshot_when_still(page, screenshots / "shadow_day_row_counts.png")
    numbers = dialog.inner_text()
    rows = row_counts_d3["metadata"]["rows"]
    assert f"\nrows\n{rows}\n" in numbers and f"\nexpected_rows\n{rows}\n" in numbers, numbers
    assert rows == shadow_d3["rows"]
    page.keyboard.press("Escape")

    # A day the gap held back: not materialized, and the failed check names the lost hour.
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(GAP_EVENTS)}?view=partitions&partition={D2}",
        "Latest materialization",
    )
    wait_for_text(page, r"failed, and did not materialize this asset\.")
    screenshot_when_still(page, screenshots / "gap_events_failed_day.png")
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(GAP_EVENTS)}?view=checks&checkDetail=settled",
        "Execution history",
    )
    wait_for_text(page, r"^settled\nFailed$", *(rf"^{check}\nSucceeded$" for check in EVENTS_CHECKS[:-1]))
    page.get_by_text("Partitions", exact=True).last.click()
    page.get_by_placeholder("Filter by partition").fill(D2)
    page.get_by_text(D2, exact=True).first.click()
    wait_for_text(
        page,
        rf"^{D2}\nFailed$",
        rf"^missing_hours\s+{MISSING_HOURS}$",
        rf"^problem\s+no archive file for ingestion hours {MISSING_HOURS}$",
    )
    screenshot_when_still(page, screenshots / "gap_events_settled_day.png")


def test_a_checks_partitions_tab_counts_the_days_that_passed(views_backfill, dagster_dev, page, screenshots):
    assert views_backfill["status"] == "COMPLETED_SUCCESS"
    open_page(
        page,
        dagster_dev,
        f"/assets/{'/'.join(SHADOW)}?view=checks&checkDetail=row_counts_per_bucket",
        "Execution history",
    )
    page.get_by_text("Partitions", exact=True).last.click()
    try:
        wait_for_text(page, rf"^Passed \({len(DAYS)}\)$", timeout_s=20)
    finally:
        screenshot_when_still(page, screenshots / "shadow_check_partitions.png")
