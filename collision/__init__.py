"""collision package (in progress)."""
