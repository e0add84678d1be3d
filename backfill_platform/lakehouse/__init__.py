"""Local Spark + Iceberg lakehouse: settings, jars, resources and table helpers."""
