"""Validation shared by events and datasets: pandera schemas, checksums, result formatting."""
