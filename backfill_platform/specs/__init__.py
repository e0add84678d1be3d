"""Declarative specs of streams and datasets, and their discovery."""
