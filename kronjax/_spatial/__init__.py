"""What every tree algorithm of kronjax shares (private), below the algorithms and above the model
(:mod:`kronjax.chain`).

- :mod:`.algebra`: spatial algebra in scalar components (every cross product and inertia product);
- :mod:`.expansion`: multi-DoF joints as chains of sub-joints, mimic joints as a reduction;
- :mod:`.traversal`: the scan schedule (:func:`~.traversal.down`, :func:`~.traversal.up`) and the
  ancestry masks;
- :mod:`.inputs`: the typed per-body inputs of the recursions (joints, bodies);
- :mod:`.frames`: joint transforms and forward kinematics.

The entry points of the algorithms built on these modules (Newton-Euler, the articulated-body
algorithm, the composite-body matrices, the Jacobians and Hessians, the derivatives of the
dynamics) are ``equinox.filter_jit``-compiled: called outside ``jit``, JAX would otherwise dispatch
their thousands of scalar operations one at a time (0.2-1 s per call for the Panda); inside a
``jit`` they are inlined as any nested ``jit`` is (``tests/test_dispatch.py``).
"""
