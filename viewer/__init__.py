"""viewer package (in progress)."""
