"""The load-time check of a URDF model's mass matrix (private): ``M`` at random configurations in
NumPy, its pivots, and which singularity a zero pivot is (a joint that moves no mass, or a repeated
motion)."""

from __future__ import annotations

import numpy as np

from .._rotations import axis_angle
from .._spatial.expansion import SUB_JOINTS
from ..chain import Joint
from ._elements import LinkMass, URDFError


def mass_matrix_at(joints: list[Joint], masses: list[LinkMass], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M(q)`` (``n x n``, coordinates in body order) by the composite-rigid-body algorithm in
    world coordinates, in NumPy: a check at load time, without compiling the model. Also, per
    coordinate, the size of the terms that ``M[k, k]`` sums (its scale for rounding errors)."""
    nb = len(joints)
    rotations, origins, pivots = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 3))
    motion = np.zeros((nb, 6))  # joint axes as spatial motions [w, v at the world origin]
    composite = np.zeros((nb, 6, 6))  # spatial inertias about the world origin, then of subtrees
    ancestors = np.zeros((nb, nb), bool)  # [i, j]: body j is body i or one of its ancestors
    for i, joint in enumerate(joints):
        r, p = (np.eye(3), np.zeros(3)) if joint.parent < 0 else (rotations[joint.parent], origins[joint.parent])
        if joint.parent >= 0:
            ancestors[i] = ancestors[joint.parent]
        ancestors[i, i] = True
        p = pivots[i] = p + r @ np.asarray(joint.translation)
        r = r @ np.asarray(joint.rotation)
        axis = r @ np.asarray(joint.axis)
        if joint.kind == "R":
            motion[i] = [*axis, *np.cross(p, axis)]
            r = r @ axis_angle(np.asarray(joint.axis), q[i], xp=np)
        elif joint.kind == "P":
            motion[i, 3:] = axis
            p = p + axis * q[i]
        rotations[i], origins[i] = r, p
        m = masses[i]
        c = p + r @ m.com
        cx = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
        composite[i, :3, :3] = r @ m.inertia @ r.T - m.mass * (cx @ cx)
        composite[i, :3, 3:] = m.mass * cx
        composite[i, 3:, :3] = -m.mass * cx
        composite[i, 3:, 3:] = m.mass * np.eye(3)
    for i in reversed(range(nb)):  # parents precede children
        if joints[i].parent >= 0:
            composite[joints[i].parent] += composite[i]
    moving = [i for i, joint in enumerate(joints) if joint.kind != "F"]
    s = motion[moving]
    g = s @ np.einsum("kab,kb->ka", composite[moving], s).T  # g[l, k] = S_l . Ic_k S_k
    lower = np.where(ancestors[np.ix_(moving, moving)].T, g, 0.0)  # M[l, k] for l at or above k
    c = composite[moving]  # sum of tr I + 2 m |c|^2 about the origin, m |p|^2 from the shift to the pivot
    scale = np.trace(c[:, :3, :3], axis1=1, axis2=2) + c[:, 3, 3] * (1.0 + np.sum(pivots[moving] ** 2, axis=1))
    return lower + lower.T - np.diag(np.diag(lower)), scale


def first_bad_pivot(m: np.ndarray, tol: float) -> int | None:
    """The first ``k`` at which the Cholesky factorisation of ``m`` (unit diagonal) fails or its
    pivot falls below ``tol``; ``None`` when there is none. The leading ``k x k`` block has the
    first ``k`` pivots, so a bisection finds it."""

    def fine(k: int) -> bool:
        try:
            factor = np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return False
        return bool(np.all(np.diag(factor) ** 2 >= tol))

    if fine(len(m)):
        return None
    good, bad = 0, len(m)
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fine(mid) else (good, mid)
    return bad - 1


def _sub_joints(joints: list[Joint], masses: list[LinkMass]) -> tuple[list[Joint], list[LinkMass]]:
    """Multi-DoF joints as chains of 1-DoF joints in the child frame (the recursions' sub-joints,
    :data:`kronjax._spatial.expansion.SUB_JOINTS`: the translations, then the rotations; massless but for
    the last), which have the same ``M`` at some configuration."""
    out, out_masses, index = [], [], {}
    for i, (joint, mass) in enumerate(zip(joints, masses)):
        parent = -1 if joint.parent < 0 else index[joint.parent]
        subs = SUB_JOINTS.get(joint.kind)
        if subs is None:
            out.append(Joint(joint.kind, parent, joint.axis, joint.rotation, joint.translation, joint.name, mimic=joint.mimic))
            out_masses.append(mass)
        else:
            for k, (kind, axis) in enumerate(subs):
                first = k == 0
                out.append(
                    Joint(
                        kind,
                        parent if first else len(out) - 1,
                        axis,
                        joint.rotation if first else np.eye(3),
                        joint.translation if first else np.zeros(3),
                        joint.name,
                    )
                )
                out_masses.append(mass if k == len(subs) - 1 else LinkMass())
        index[i] = len(out) - 1
    return out, out_masses


def _mimic_reduction(joints: list[Joint]) -> np.ndarray | None:
    """``G`` (moving joints x coordinates): the moving joints' rates from the coordinates (mimic
    joints follow their primary, of mimics resolved to the first primary). By position, not name:
    the sub-joints of a multi-DoF joint share its name."""
    if all(j.mimic is None for j in joints):
        return None
    moving = [j for j in joints if j.kind != "F"]
    own = [row for row, j in enumerate(moving) if j.mimic is None]
    column = {row: c for c, row in enumerate(own)}
    row_of = {j.name: row for row, j in enumerate(moving) if j.kind in ("R", "P")}  # primaries are 1-DoF joints
    g = np.zeros((len(moving), len(column)))
    for row in range(len(moving)):
        factor, at = 1.0, row
        for _ in range(len(joints) + 1):  # a cycle is refused by from_joints, with its names
            if moving[at].mimic is None:
                break
            factor *= moving[at].mimic[1]
            at = row_of[moving[at].mimic[0]]
        else:
            return None
        g[row, column[at]] = factor
    return g


def singular_mass_matrix(joints: list[Joint], masses: list[LinkMass]) -> str | None:
    """The joints that move no mass at a random configuration (so at almost every configuration:
    the rank of ``M(q)`` is generic), for a warning: their articulated-body pivots are zero, so
    :func:`~kronjax.forward_dynamics` raises. ``None`` when ``M`` is positive definite. URDFError
    when a column overflows float64, or when ``M`` is singular otherwise: the pivots are then at
    rounding level, which forward dynamics cannot tell from small ones."""
    joints, masses = _sub_joints(joints, masses)
    q = np.random.default_rng(0).uniform(-np.pi, np.pi, len(joints))
    m, scale = mass_matrix_at(joints, masses, q)  # mimic joints at independent angles: the rank is generic
    names = [joint.name for joint in joints if joint.kind != "F" and joint.mimic is None]
    reduction = _mimic_reduction(joints)
    if reduction is not None:
        m, scale = reduction.T @ m @ reduction, np.abs(reduction).T @ scale
    for k in np.flatnonzero(~np.all(np.isfinite(m), axis=0))[:1]:
        raise URDFError(
            f"joint {names[k]!r}: its column of the mass matrix overflows float64 (masses, inertias or lengths too large)"
        )
    eps = np.finfo(float).eps
    d = np.diag(m)
    massless = np.flatnonzero(~(d > 64 * eps * scale))  # zero up to cancellation, however light
    if massless.size:
        listed = ", ".join(f"{names[k]!r} (M[{k}, {k}] = {d[k]:.3g}, rounding errors of {eps * scale[k]:.3g})" for k in massless)
        one = massless.size == 1
        return (
            f"{'joint' if one else 'joints'} {listed} {'moves' if one else 'move'} no mass: every link below "
            f"{'it' if one else 'each'} has no mass and no inertia about its axis, or (revolute) its centre of mass on the axis"
        )
    root = np.sqrt(d)  # not sqrt(d d^T), which overflows for entries above 1e154
    k = first_bad_pivot(m / root[:, None] / root[None, :], 4 * len(m) * eps)
    if k is not None:  # an error: forward dynamics would see a pivot at rounding level, not one that raises
        raise URDFError(
            f"joint {names[k]!r}: the mass matrix is singular to working precision: for all the mass "
            "it moves, its motion is a combination of the motions of the joints above it (e.g. a "
            "joint coaxial with the one before it with no mass between them), or the masses and "
            "inertias span more orders of magnitude than float64 resolves"
        )
    return None
