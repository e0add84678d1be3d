"""What the command line does for a whole backfill: plan it, run it, and tell each day's status.

`plan` lists what a range would read (from the archive listing, without Spark) and what the ledger
already knows; `backfill` runs events → shadow → checks → production through the code location's asset
job and reports each day from the run's check evaluations and the ledger; `status` tells each day's
state from the ledger alone. The `cli` package only parses options and prints.
"""
