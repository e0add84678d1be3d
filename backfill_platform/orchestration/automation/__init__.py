"""Declarative automation: the refresh conditions, the sensor, what a read saw and why a day failed (the exact
archive → events partition mapping they use is `pipeline/hour_mapping.py`)."""
