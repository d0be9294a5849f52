"""NumPy mode: trace plain NumPy kernels through proxy arrays backed by JAX tracers, with
in-place updates of the arguments (Reactant's mutation semantics).

Modules: storage (roots, view ops, write-through), proxy (the ndarray look-alike) and operators
(its operators and array-first methods), indexing, masks and ranged (``a[key]``, ``a[key] = v``;
``a[mask]``; ``a[i:j]`` with a traced bound), ufuncs and functions (NumPy -> jax.numpy dispatch,
NumPy's dtypes, NumPy scalars where NumPy gives them), layouts (the memory order of computed
arrays), views and inplace (functions working on proxies), creation (overlays of np.zeros / ... /
np.random while tracing), errors, tracer (the flat function handed to JAX), journal and carry
(what a rolled loop or a converted branch carries).
"""

from reactant_lab.trace.numpy_mode import carry
from reactant_lab.trace.numpy_mode.errors import JaxCodeError
from reactant_lab.trace.numpy_mode.overlap import check_independent
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    new_array,
    new_scalar,
    proxy_for,
    stand_in,
)
from reactant_lab.trace.numpy_mode.ranged import RangedArray
from reactant_lab.trace.numpy_mode.storage import is_traced
from reactant_lab.trace.numpy_mode.tracer import resargs_path, trace_numpy

__all__ = ["JaxCodeError", "ProxyArray", "RangedArray", "carry", "check_independent", "is_traced",
           "new_array", "new_scalar", "proxy_for", "resargs_path", "stand_in", "trace_numpy"]
