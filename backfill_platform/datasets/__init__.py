"""Transforms of the demo datasets: PySpark functions of the events of a window."""
