"""scenes package (in progress)."""
