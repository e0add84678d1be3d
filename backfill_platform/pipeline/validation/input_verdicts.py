"""Pure verdicts over what a dataset's partitions read: every source partition ingested, checked, unchanged.

A pure verdict module (`*_verdicts.py`): it judges the inputs a shadow run pinned (`partition_inputs.JudgedInputs`,
read by `shadow/inputs.py`), with no Spark, no ledger and no Dagster context; `shadow/checks.py` calls it.
"""

from __future__ import annotations

from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.partition_inputs import JudgedInputs
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict


def events_validated_verdicts(check: str, days: list[str], judged: JudgedInputs) -> list[PartitionVerdict]:
    """Every source day a day reads was ingested, passed its own blocking checks (`settled` among them),
    and still holds those events: a join's day is settled only when all its inputs are.

    Without this, a day whose events were never loaded would validate trivially (0 rows expected,
    0 found) and promotion would empty that production partition; events rewritten by a run that
    died before its checks would be trusted on an older run's verdict; and a join of a settled source
    with one still receiving late events would publish an undercount stamped "validated".
    """
    verdicts = []
    for day in days:
        reads = judged.reads[day]
        problems, runs, provisional = [], [], False
        for stream, read_day in reads:
            ingestion = judged.ingestions[stream].get(read_day)
            problem = source_day_problem(ingestion, judged.fingerprints_by_partition[stream][read_day])
            if problem:
                # A one-stream day names no source: the day is the source day.
                problems.append(problem if len(reads) == 1 else f"{stream} {read_day}: {problem}")
            if ingestion:
                runs.append(ingestion["run_id"])
                provisional = provisional or bool(ingestion.get("provisional"))
        metadata = {
            "events_rows": judged.inputs[day].total.rows,
            "events_run": ", ".join(sorted(set(runs))) or "none",
            "provisional": provisional,
            "problem": "; ".join(problems) or "none",
        }
        if len(reads) > 1:  # a join, or a lookback: what the day read, and each source's share of it
            metadata["inputs"] = ", ".join(f"{stream} {read_day}" for stream, read_day in reads)
            for stream, fingerprint in judged.inputs[day].per_source.items():
                metadata[f"{stream}_rows"] = fingerprint.rows
        verdicts.append(PartitionVerdict(check, day, not problems, metadata))
    return verdicts


def source_day_problem(ingestion: dict | None, events: Fingerprint) -> str | None:
    """What is wrong with one source day a dataset day read (its latest ingestion row, and its events'
    fingerprint now), or None."""
    if ingestion is None:
        return "events never ingested"
    if ingestion["checks_passed"] is None:
        return "ingested before verdicts were recorded: re-materialize the events of this day"
    if not ingestion["checks_passed"]:
        return f"events failed {ingestion['failed_checks']} in run {ingestion['run_id']}"
    if Fingerprint.recorded(ingestion, "events") != events:
        return f"events changed after their checks in run {ingestion['run_id']}: re-materialize them"
    return None
