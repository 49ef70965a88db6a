"""Input checks shared by the public entry points of simstep (`WorldBuilder`, `Simulator`).

Each function returns the value in canonical form or raises before anything is changed:
TypeError for a value of the wrong kind (a string where a number is expected), ValueError
for a value of the right kind but out of range (NaN, inf, wrong shape, negative size). The
message names the argument and shows the value given.
"""
from __future__ import annotations

import numbers

import numpy as np

UNIT_TOL = 1e-6   # quaternions with |‖q‖ − 1| ≤ UNIT_TOL are normalised, others refused


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _range_text(low, high, low_open, high_open):
    lo, hi = (None if x is None else f"{x:g}" if isinstance(x, float) else f"{x}" for x in (low, high))
    if low == 0 and high is None:
        return "positive" if low_open else "≥ 0"
    if high is None:
        return f"{'>' if low_open else '≥'} {lo}"
    if low is None:
        return f"{'<' if high_open else '≤'} {hi}"
    return f"in {'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}"


def check_number(name, value, low=None, high=None, low_open=False, high_open=False, exc=ValueError,
                 allow_inf=False):
    """value as a float within the bounds (open or closed), finite unless allow_inf (+inf for
    "no limit"; NaN never); `exc` for a bad range."""
    if _is_bool(value) or isinstance(value, (str, bytes)) or np.ndim(value) != 0:
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None
    ok = (np.isfinite(x) or (allow_inf and x == np.inf)) and (low is None or (x > low if low_open else x >= low)) \
        and (high is None or (x < high if high_open else x <= high))
    if not ok:
        fin = "" if allow_inf else " and finite"
        rng = _range_text(low, high, low_open, high_open) + fin if (low, high) != (None, None) \
            else "a finite number"
        raise exc(f"{name} must be {rng}, got {value!r}")
    return x


def check_int(name, value, low=None, high=None):
    """value as an int within [low, high]; an integral float (1e4) is accepted, 1.5 is not."""
    if _is_bool(value) or isinstance(value, (str, bytes)) or np.ndim(value) != 0:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be an integer, got {value!r}") from None
        if not (np.isfinite(x) and x == int(x)):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        value = x
    i = int(value)
    if (low is not None and i < low) or (high is not None and i > high):
        raise ValueError(f"{name} must be an integer {_range_text(low, high, False, False)}, got {value!r}")
    return i


def check_bool(name, value):
    """value as a bool: True, False (numpy bools and the integers 0 and 1 too)."""
    if _is_bool(value) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")


def check_choice(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_vector(name, value, shape):
    """value as a float array of `shape` (an int n: any layout of n numbers, flattened), all finite."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers, got {value!r}") from None
    if isinstance(shape, numbers.Integral):
        a = a.reshape(-1)
        if a.shape != (shape,) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be {shape} finite numbers, got {value!r}")
        return a
    if a.shape != tuple(shape) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a finite array of shape {tuple(shape)}, got {value!r}")
    return a


def check_quaternion(name, value):
    """A unit quaternion (x, y, z, w): normalised if its norm is within UNIT_TOL of 1, else refused."""
    q = check_vector(name, value, 4)
    n = np.linalg.norm(q)
    if abs(n - 1.0) > UNIT_TOL:
        raise ValueError(f"{name} {tuple(float(x) for x in q)} is not a unit quaternion (norm {n:.9g}); "
                         f"use (qx, qy, qz, qw) with norm 1")
    return q / n


def check_body(name, value):
    """A body given by name (str) or index (int); the lookup itself raises KeyError if unknown."""
    if isinstance(value, str) or (isinstance(value, numbers.Integral) and not _is_bool(value)):
        return value if isinstance(value, str) else int(value)
    raise TypeError(f"{name} must be a body name (str) or index (int), got {value!r}")
