"""`python -m backfill_platform.cli`."""

from backfill_platform.cli import main

main()
