"""Kernels for `test_jitcache.py`'s test of Python wrappers (in the tests package, so that
`models.jitcache` compiles them as this project's kernels; cached in the test's NUMBA_CACHE_DIR)."""
import numpy as np
from numba import njit


@njit(cache=True)
def sorted_head(a, n):
    """The indices of a's n smallest entries (an array to box) and a's sum."""
    k = np.argsort(a)
    return k[:n], a.sum()


@njit(cache=True)
def head_sum(a):
    """`sorted_head`'s sum of a, called from a kernel."""
    return sorted_head(a, a.shape[0] - 1)[1]


@njit(cache=True)
def doubled(a):
    """2 a (a new array)."""
    return 2.0 * a
