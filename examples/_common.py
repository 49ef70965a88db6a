"""Shared by the examples: a short run when SIMSTEP_EXAMPLE_DURATION is set (the test suite
sets it), and the folder for written files (SIMSTEP_EXAMPLE_OUT, default: the current one)."""
import os


def duration(default):
    """Simulated seconds: SIMSTEP_EXAMPLE_DURATION if set, else `default`."""
    return float(os.environ.get("SIMSTEP_EXAMPLE_DURATION", default))


def out(name):
    """Path of an output file `name` in SIMSTEP_EXAMPLE_OUT (default: the current folder)."""
    d = os.environ.get("SIMSTEP_EXAMPLE_OUT", ".")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)
