"""Archive → events: parse, upcast, deduplicate and account for every record of a window."""
