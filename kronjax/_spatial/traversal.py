"""How the tree algorithms visit a tree (private): scans over its unbranched runs, and static
ancestry masks.

Recursions (:func:`down`, :func:`up`) are a ``lax.scan`` over each unbranched run of bodies (a
chain is one run; :class:`Schedule`), so compile time does not grow with the number of bodies.

The mask-based algorithms (composite bodies, the derivatives of the dynamics, the Jacobians and
Hessians) instead form arrays over pairs of bodies or coordinates by broadcasting with the static
masks of :func:`ancestry`; :func:`on_paths` forms the ``n x n`` ones block by block, skipping the
pairs on different branches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ..chain import Tree
from .algebra import pairs
from .expansion import SUB_JOINTS, expansion
from .inputs import Joint


class Schedule(NamedTuple):
    """How the recursions visit the :func:`~kronjax._spatial.expansion.expanded` tree; static. ``parents`` of the expanded
    bodies and ``spans``: the unbranched runs ``[start, end)`` (``parents[i] == i - 1`` inside a run)
    that :func:`down` and :func:`up` scan, with each multi-DoF joint's first sub-joint alone in a
    span of its own, which they visit without a scan: only that body's transform depends on the
    joint's whole motion ``(G, t)`` (:func:`~kronjax._spatial.frames.joint_transform`), so the scanned bodies' coefficients
    stay constants shared by a batch instead of rows of a batched stack. The joint's other
    sub-joints have identity transforms: a span that holds only such bodies (``identity``; a
    floating root's, which ends at the branching root body) skips the transforms. A body with
    children in other spans ends its span, so that what passes between spans is a scan's initial
    or final carry, never stacked: at large batches the recursions are bound by memory traffic
    rather than arithmetic (for the same reason the passes compute ``E`` and ``r`` again rather
    than keep them)."""

    parents: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]
    identity: tuple[bool, ...]


@functools.lru_cache(maxsize=128)
def _schedule(parents: tuple[int, ...], chains: tuple[tuple[int, int], ...]) -> Schedule:
    cuts = {i for i, parent in enumerate(parents) if i == 0 or parent != i - 1}
    roots = {parent for i, parent in enumerate(parents) if parent >= 0 and parent != i - 1}
    cuts |= {root + 1 for root in roots} | {i for lead, end in chains for i in (lead, lead + 1)}
    starts = sorted(cut for cut in cuts if cut < len(parents))
    spans = tuple(zip(starts, starts[1:] + [len(parents)]))
    identity = tuple(any(lead < start and end <= stop for lead, stop in chains) for start, end in spans)
    return Schedule(parents, spans, identity)


def schedule(tree: Tree) -> Schedule:
    """The :class:`Schedule` of a tree's recursions."""
    ex = expansion(tree)
    return _schedule(ex.parents, tuple((lead, lead + len(SUB_JOINTS[kind])) for kind, _, _, lead, _ in ex.multi))


def _visit(step: Callable, carry: Any, rows: Any, reverse: bool = False):
    """``lax.scan(step, carry, rows)``, or one call of ``step`` for a span of one body."""
    if len(jax.tree.leaves(rows)[0]) > 1:
        return jax.lax.scan(step, carry, rows, reverse=reverse)
    carry, out = step(carry, jax.tree.map(lambda x: x[0], rows))
    return carry, jax.tree.map(lambda x: jnp.asarray(x)[None], out)


def down(order: Schedule, step: Callable, base: Any, inputs: list) -> list:
    """From the base outwards: ``carry_i, out_i = step(carry_parent(i), inputs_i)`` with
    ``carry = base`` at the base. ``inputs``: one pytree per span (:func:`split`). Returns each
    span's stacked outputs, in span order (carries are not stacked: a span's parent ends its own
    span, and passes the scan's final carry)."""
    outputs, carries = [], {}
    for (start, end), span_inputs in zip(order.spans, inputs):
        root = order.parents[start]
        carries[end - 1], out = _visit(step, base if root < 0 else carries[root], span_inputs)
        outputs.append(out)
    return outputs


def up(order: Schedule, step: Callable, zero: Any, inputs: list) -> list:
    """From the leaves inwards: ``to_parent_i, out_i = step(from_children_i, inputs_i)``, where
    ``from_children_i`` sums what body ``i``'s children pass up (``zero`` for a leaf).
    ``inputs``: one pytree per span. Returns each span's stacked outputs."""
    outputs = [None] * len(order.spans)
    passed = {}  # body -> what its child spans pass up to it: the last body of its span
    for k in reversed(range(len(order.spans))):
        start, end = order.spans[k]
        to_root, outputs[k] = _visit(step, passed.pop(end - 1, zero), inputs[k], reverse=True)
        root = order.parents[start]
        if root >= 0:
            passed[root] = jax.tree.map(jnp.add, passed[root], to_root) if root in passed else to_root
    return outputs


def split(order: Schedule, stack, motion: dict | None = None) -> list:
    """A per-body stack (a pytree of arrays over the expanded bodies) cut into the spans' rows. In a
    :class:`~kronjax._spatial.inputs.Joint` of the stack, an identity span's rows have no
    ``transform``, and a multi-DoF joint's first sub-joint gets its entry of ``motion``
    (``{first sub-joint: Motion}``, :func:`~kronjax._spatial.frames.joint_inputs`)."""
    motion = motion or {}
    is_joint = lambda x: isinstance(x, Joint)  # noqa: E731
    out = []
    for (start, end), identity in zip(order.spans, order.identity):

        def rows(x, start=start, end=end, identity=identity):
            x = jax.tree.map(lambda a: a[start:end], x)
            if not is_joint(x):
                return x
            first = jax.tree.map(lambda a: a[None], motion[start]) if start in motion else None
            return x._replace(transform=None if identity else x.transform, motion=first)

        out.append(jax.tree.map(rows, stack, is_leaf=is_joint))
    return out


class Ancestry(NamedTuple):
    """Static masks of a tree over the bodies of its :func:`~kronjax._spatial.expansion.expansion`
    (``n`` moving bodies, one per full coordinate, of ``nb`` expanded bodies; ``i ⪯ j``: joint
    ``i`` is ``j`` or one of its ancestors).

    ``below[j, b]`` ``(n, nb)``: body ``b`` is joint ``j``'s body or under it; ``upto[i, j]`` ``(n,
    n)``: ``i ⪯ j``; ``strict[i, j]``: ``i ≺ j`` (``i ⪯ j`` and not ``j ⪯ i``); ``moving`` ``(n,)``:
    the expanded body of each coordinate. The sub-joints of a multi-DoF joint are each other's
    ancestors (each moves the others' axes, which are fixed in the joint's child frame): ``⪯`` is
    then a preorder, and ``upto & upto.T`` off the diagonal marks two sub-joints of one joint."""

    below: np.ndarray
    upto: np.ndarray
    strict: np.ndarray
    moving: np.ndarray


def ancestry(tree: Tree) -> Ancestry:
    """The static :class:`Ancestry` of a tree."""
    ex = expansion(tree)
    return _ancestry(ex.parents, ex.kinds, tuple(ex.group.tolist()))


@functools.lru_cache(maxsize=64)
def _ancestry(parents: tuple[int, ...], kinds: tuple[str, ...], group: tuple[int, ...]) -> Ancestry:
    nb = len(parents)
    below_body = np.eye(nb, dtype=bool)
    for b in range(nb - 1, -1, -1):  # parents precede children
        if parents[b] >= 0:
            below_body[parents[b]] |= below_body[b]
    below_body = below_body[np.array(group)]  # a sub-joint carries its whole joint
    moving = np.array([kind != "F" for kind in kinds])
    below = below_body[moving]
    upto = below[:, moving]
    return Ancestry(below, upto, upto & ~upto.T, np.flatnonzero(moving))


def coordinate_parents(upto: np.ndarray) -> tuple[int, ...]:
    """Each coordinate's parent in the tree of coordinates (``-1`` at the root): the nearest of its
    ancestors (``upto[j, i]``: ``j ⪯ i``; parents precede children), the coordinates of one joint
    a chain."""
    return _coordinate_parents(np.ascontiguousarray(upto).tobytes(), upto.shape[0])


@functools.lru_cache(maxsize=64)
def _coordinate_parents(upto_bytes: bytes, n: int) -> tuple[int, ...]:
    upto = np.frombuffer(upto_bytes, dtype=bool).reshape(n, n)
    return tuple(int(max(np.flatnonzero(upto[:i, i]), default=-1)) for i in range(n))


@functools.lru_cache(maxsize=64)
def coordinate_spans(parents: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The unbranched runs ``[start, end)`` of the tree of coordinates (:func:`coordinate_parents`):
    a run ends where the next coordinate does not hang from its last, or its last has several
    children. So a run that is an ancestor of another is wholly ancestor of all of it."""
    n = len(parents)
    children = np.bincount([p for p in parents if p >= 0], minlength=n)
    starts = [j for j in range(n) if j == 0 or parents[j] != j - 1 or children[j - 1] > 1]
    return tuple(zip(starts, starts[1:] + [n]))


# Past this many runs of coordinates (a tree that branches at most of its joints) the blocks of
# on_paths are too small to pay for their compile time.
BLOCKS_UP_TO = 24


def on_paths(upto: np.ndarray, ancestor: tuple, descendant: tuple, joint: str, blocks: bool = True) -> Array:
    """The ``n x n`` array over pairs of coordinates that is ``pairs(*ancestor)[k, j]`` where ``k``
    is a strict ancestor of ``j`` (``k ≺ j``), ``pairs(*descendant)[k, j]`` where ``j ≺ k``, the
    one that ``joint`` (``"ancestor"`` or ``"descendant"``) names where ``k`` and ``j`` are
    coordinates of one joint (``k = j`` included), and zero off the paths (the composite-body
    matrices: ``M``, the derivatives of inverse dynamics).

    ``ancestor`` and ``descendant`` are each ``(row factors, column factors)``, pytrees of ``(n,)``
    components matched leaf by leaf (:func:`~kronjax._spatial.algebra.pairs`); ``upto`` is
    :class:`Ancestry`'s. With ``blocks`` (and at most :data:`BLOCKS_UP_TO` runs), formed block by
    block over :func:`coordinate_spans`: a block of two runs is wholly one case or zero, so only
    the pairs on a common path are multiplied (a third of them on the G1) and no mask is applied
    outside the diagonal blocks; otherwise every pair is multiplied and masked, which compiles
    faster."""
    mutual = upto & upto.T
    first = (upto & ~upto.T) | (mutual if joint == "ancestor" else False)
    spans = coordinate_spans(coordinate_parents(upto))
    if not blocks or len(spans) > BLOCKS_UP_TO:
        return jnp.where(first, pairs(*ancestor), 0) + jnp.where(upto.T & ~first, pairs(*descendant), 0)
    a_rows, a_cols, d_rows, d_cols = (jax.tree.leaves(x) for x in (*ancestor, *descendant))

    def block(rows, cols, r: slice, c: slice) -> Array:
        return sum(x[r, None] * y[None, c] for x, y in zip(rows, cols))

    out = []
    for r0, r1 in spans:
        row = []
        for case, c0, c1 in _row_blocks(spans, upto, r0):
            r, c = slice(r0, r1), slice(c0, c1)
            if case == "joint":  # the run itself, a chain: every pair is on a path
                row.append(jnp.where(first[r, c], block(a_rows, a_cols, r, c), block(d_rows, d_cols, r, c)))
            elif case == "ancestor":
                row.append(block(a_rows, a_cols, r, c))
            elif case == "descendant":
                row.append(block(d_rows, d_cols, r, c))
            else:
                row.append(jnp.zeros((r1 - r0, c1 - c0), a_rows[0].dtype))
        out.append(jnp.concatenate(row, axis=1))
    return jnp.concatenate(out, axis=0)


def _row_blocks(spans: tuple[tuple[int, int], ...], upto: np.ndarray, r0: int) -> list[tuple[str, int, int]]:
    """The blocks ``(case, start, end)`` of the run that starts at ``r0`` across the columns: its
    own run (``"joint"``), runs below it (``"ancestor"``: the row is their ancestor), above it
    (``"descendant"``) or off its paths (``"zero"``), neighbouring runs of one case merged (a
    subtree's runs are usually consecutive), so that a tree with many short runs (hands) is a few
    blocks per row."""
    blocks: list[tuple[str, int, int]] = []
    for c0, c1 in spans:
        case = "joint" if c0 == r0 else "ancestor" if upto[r0, c0] else "descendant" if upto[c0, r0] else "zero"
        if blocks and case != "joint" and blocks[-1][0] == case:
            blocks[-1] = (case, blocks[-1][1], c1)
        else:
            blocks.append((case, c0, c1))
    return blocks
