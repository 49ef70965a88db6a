"""Stack scratch arrays (`models.scratch`) in kernels compiled without numba's reference counting."""
import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError
from numba.core.runtime import _nrt_python, rtsys

import scenes
from models.data import Data
from models.dynamics import minv_kernel
from models.scratch import stack_matrix, stack_vector


@pytest.fixture
def allocations():
    """numba's count of heap allocations (its statistics on for the test)."""
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    yield lambda: rtsys.get_allocation_stats().alloc
    if not was:
        _nrt_python.memsys_disable_stats()


@njit(_nrt=False)
def _double_into(a, out):
    for i in range(a.shape[0]):
        out[i] = 2.0 * a[i]


@njit(_nrt=False)
def _uses_scratch(x, out):
    """For k = 0, 1, 2: a = x + k, b = 2 a (by a callee), M[r, c] = 10 r + c + b[r]; out[k] = Σ M."""
    a = stack_vector(6)
    M = stack_matrix(3, 4)
    for k in range(3):
        for i in range(6):
            a[i] = x[i] + k
        b = stack_vector(6)
        _double_into(a, b)
        for r in range(3):
            for c in range(4):
                M[r, c] = 10.0 * r + c + b[r]
        out[k] = M.sum()
    return M.shape[0], M.shape[1], M.strides[0], M.strides[1], a.strides[0]


def test_stack_arrays_hold_values_without_heap_allocation(allocations):
    x, out = np.arange(6.0), np.empty(3)
    _uses_scratch(x, out)                     # compiled first: the allocation count below is the call's
    before = allocations()
    shape = _uses_scratch(x, out)
    assert allocations() == before
    assert shape == (3, 4, 32, 8, 8)        # C order
    for k in range(3):
        b = 2.0 * (x + k)
        M = 10.0 * np.arange(3)[:, None] + np.arange(4)[None, :] + b[:3, None]
        assert out[k] == M.sum()


def test_stack_sizes_must_be_constants():
    @njit(_nrt=False)
    def sized(n):
        return stack_vector(n).shape[0]
    with pytest.raises(TypingError):
        sized(4)


def test_dynamics_sweeps_allocate_nothing(allocations):
    """The step's dynamics kernels run without numba's runtime (a heap allocation in them would
    not compile): M⁻¹ by the sweeps on a factor at q, against the dense M⁻¹ of CRBA."""
    w = scenes.quadruped("go2")
    m = w.model
    d = Data(m)
    d.compute(w.q0)
    n, nv = m.nbodies, m.nv
    fext, qdd, acc, pA = np.zeros((n, 6)), np.empty(nv), np.empty((n, 6)), np.empty((n, 6))
    tau = np.zeros(nv)
    minv_kernel(m.jint, d.S, d.U, d.Dinv, tau, fext, qdd, acc, pA)
    before = allocations()
    Minv = np.empty((nv, nv))
    for k in range(nv):
        tau[:] = 0.0
        tau[k] = 1.0
        minv_kernel(m.jint, d.S, d.U, d.Dinv, tau, fext, qdd, acc, pA)
        Minv[:, k] = qdd
    assert allocations() == before
    from models.dynamics import crba
    np.testing.assert_allclose(Minv, np.linalg.inv(crba(m, w.q0)), rtol=1e-9, atol=1e-9)
