"""The demo project's component instances: the streams (playback, playback_hourly, impressions), the datasets
(views_per_title, plays_new_york, attributed_plays) and the lakehouse."""
