"""Probe scripts run as files inside the user's interpreter (never imported by the tool process)."""
