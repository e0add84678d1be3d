"""Declarative automation: the exact archive → events partition mapping, the refresh conditions, the sensor."""
