"""The raw archive: immutable, time-bucketed files as the delivery stream wrote them."""
