"""The demo's story, its legacy table."""
