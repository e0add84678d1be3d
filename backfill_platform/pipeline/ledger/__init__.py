"""The ledger: the audit trail from archive records to promoted production partitions."""
