"""solvers package (in progress)."""
