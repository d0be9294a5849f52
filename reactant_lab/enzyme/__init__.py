"""Reactant's Enzyme vocabulary in Python: automatic differentiation and batching done by
Enzyme-JAX's ``enzyme`` and ``enzyme-batch`` passes rather than by JAX.

``gradient``, ``value_and_gradient`` and ``vjp`` (reverse mode) emit ``enzyme.autodiff``, ``jvp``
(forward mode) emits ``enzyme.fwddiff``, ``batch`` (a vmap) emits ``enzyme.batch``: the function
being differentiated or batched becomes its own private ``func.func`` of the traced module,
called by the Enzyme op in ``@main``, as Reactant.jl's ``Enzyme.autodiff`` / ``batch`` trace it
(``Traced.enzyme_ops`` lists them). The ``batch`` and ``enzyme (AD)`` stages then do the
transformation; presets that lack them (``no_enzyme`` and ``just_batch`` for AD; ``none``,
``canonicalize``, ``noopt`` for both) leave the op in, and XLA cannot compile the module (a
CompileError says so).

Activities (Enzyme's annotations, per flattened argument leaf) follow from ``argnums``: reverse
mode marks floating-point and complex leaves of the differentiated arguments ``enzyme_active``
and every other array ``enzyme_const``; forward mode marks leaves with a tangent ``enzyme_dup``.
Integer leaves are const: ``gradient`` refuses to differentiate them unless ``allow_int=True``
(as jax.grad), and their derivative is zeros of their own dtype where JAX gives float0 (in
``vjp`` too); ``jvp`` takes a float0 tangent for them, as jax.jvp. Non-array leaves (strings,
callables, ...) of arguments not differentiated are static: baked into the function. Experts
pass ``activity=``: one entry per positional argument, ``'active'`` or ``'const'`` (or Enzyme's
names), or a pytree of these matching the argument; the gradient is then a tuple with one entry
per positional argument, None for an all-const one (Enzyme.jl's ``gradient`` returns
``nothing`` for a Const argument). ``batch`` broadcasts arguments whose axis is None, and the
values the function closes over, to the batch.

Conventions and checks are JAX's. Complex numbers: a gradient of a real function of complex z
is JAX's (2 conj(z) for ``|z|**2``, the conjugate of what Enzyme computes; reverse mode
conjugates complex cotangents on the way in and complex gradients on the way out), ``vjp`` takes
and gives JAX's cotangents, ``jvp`` needs no change; ``gradient`` of a complex output needs
``holomorphic=True``. Arguments JAX's transformation refuses (an integer input to differentiate,
a tangent or cotangent of another structure, shape or dtype, a tuple returned where one scalar
was due, an out_axes out of range or None for a result that varies along the batch) raise an
EnzymeArgumentError naming the argument, before anything is compiled.

Each function works inside functions reactant_lab traces (``rl.trace``, ``rl.jit``,
``rl.explore``, ``%%reactant_jit``), in JAX mode and in NumPy mode: a NumPy kernel, in-place
updates included, is differentiated or batched with respect to its inputs (it runs on proxy
arrays of its own, so its updates stay inside the function, as Enzyme differentiates mutating
code) and the results come back to the calling kernel as its arrays. Called outside any trace
each compiles and runs through the pipeline like ``rl.jit`` (preset ``all``; NumPy mode for NumPy
arrays). Without enzyme-ad they fall back to ``jax.grad`` / ``jax.value_and_grad`` /
``jax.vjp`` / ``jax.jvp`` / ``jax.vmap``, traced the same way, with an EnzymeUnavailableWarning
saying why. Not supported yet: JAX transformations of the result (``jax.grad`` / ``jax.vmap`` of
a function that calls these), keyword-argument differentiation.
"""

from __future__ import annotations

from reactant_lab.enzyme.batching import batch
from reactant_lab.enzyme.forward import jvp
from reactant_lab.enzyme.reverse import gradient, value_and_gradient, vjp

__all__ = ["batch", "gradient", "jvp", "value_and_gradient", "vjp"]
