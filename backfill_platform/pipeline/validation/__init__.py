"""What the stages' checks share: pure verdicts, fingerprints, bucket figures, schemas, verdict reporting."""
