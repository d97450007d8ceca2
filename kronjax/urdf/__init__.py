"""URDF in and out: :func:`load_urdf` and :func:`to_urdf`.

kronjax reads the kinematic tree and the inertials of a robot: joints ``revolute``,
``continuous``, ``prismatic``, ``fixed``, ``floating`` (a ``"free"`` joint) and ``planar`` (in the
joint frame's x-y plane), ``<origin xyz rpy>``, ``<axis>``, ``<inertial>`` (with its own origin)
and ``<limit>``; ``floating_base=True`` puts the whole robot on a free-flyer joint. Visuals, collisions, meshes, transmissions and Gazebo tags are not
read, so a URDF that names mesh files that are not on this machine loads. :func:`to_urdf` writes
every joint kind back but ``"spherical"``, for which URDF has no joint type.

The parser is the standard library's :mod:`xml.etree.ElementTree`: URDF is a small XML dialect,
and the URDF packages on PyPI add dependencies (meshes, graphs) for parts kronjax does not use.

Frames follow URDF (and Pinocchio): a body's frame is its link frame, i.e. the joint frame after
the joint's motion. Rotations ``rpy`` are fixed-axis roll, pitch, yaw: ``Rz(y) Ry(p) Rx(r)``.

Whatever the file, :func:`load_urdf` returns a model whose numbers are finite (limits: ``inf``
for "not set") and whose mass matrix is positive definite at a random configuration or singular
only by a joint that moves no mass, named in a :class:`URDFWarning`, or raises :class:`URDFError`
naming the element; never another exception for a malformed text or file
(``tests/test_fuzz_urdf.py`` checks this on thousands of mutated files). What published files get
wrong (CAD inertias indefinite by rounding, a ``<mimic>`` on a fixed joint, massless links) is
read as Pinocchio reads it, repaired or warned about: ``docs/details/robots.md`` has the table.

Modules: ``_elements`` (the file's elements, the inertia repair, :class:`URDFError`,
:class:`URDFWarning`), ``_mass_check`` (the load-time check of ``M``), ``_load``
(:func:`load_urdf`), ``_write`` (:func:`to_urdf`).
"""

from __future__ import annotations

from ._elements import URDFError, URDFWarning
from ._load import load_urdf
from ._write import to_urdf

__all__ = ["URDFError", "URDFWarning", "load_urdf", "to_urdf"]
