"""The demo project's component instances: the playback stream, views_per_title, the lakehouse."""
