"""The `backfill-platform` CLI in process (click's CliRunner), and the tables it prints."""

from __future__ import annotations

from click.testing import CliRunner, Result

from backfill_platform.cli import main


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    print(result.output)  # shown when a test fails
    return result


def table_row(output: str, *values: str) -> list[str]:
    """The cells of the first table row (rich's box drawing) holding every one of `values`."""
    for line in output.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            if all(value in cells for value in values):
                return cells
    raise AssertionError(f"no table row holds {values}")
