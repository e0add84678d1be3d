"""What the command line does for a whole backfill: plan it, run it, and tell each day's status.

`plan` lists what a range would read (from the archive listing, without Spark) and what the ledger
already knows; `backfill` runs events → shadow → checks → production through the code location's asset
job (in this process, or submitted to a webserver) and reports each day from the runs' check evaluations
and the ledger, read back one way for both; `status` tells each day's state from the ledger alone. The `cli` package only parses options and prints.
"""
