"""The data's way: each stage depends only on those before it."""
