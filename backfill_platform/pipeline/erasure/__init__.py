"""Erasure: requests as data, honored by every re-derivation and replay, cleaned forward and proven."""
