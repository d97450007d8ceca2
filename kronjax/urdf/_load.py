"""Reading URDF: :func:`load_urdf` (the fixed-joint tree, root and tip sub-chains, mimic joints,
the repair-or-warn policy for what CAD exports get wrong), from the elements that
:mod:`kronjax.urdf._elements` reads, checked by :mod:`kronjax.urdf._mass_check` (whether the mass
matrix is positive definite, in NumPy at load time)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from ..chain import Inertial, Joint, Model, from_joints
from ._elements import (
    KIND_FROM_URDF,
    MOVING_KINDS,
    REPAIRABLE,
    ROOT_JOINT,
    LinkMass,
    URDFError,
    UrdfJoint,
    link_masses,
    read_file,
    read_joint,
    settled_limits,
    warn,
)
from ._mass_check import singular_mass_matrix


def _tree(robot: ET.Element) -> tuple[dict, dict, dict]:
    """Links by name, the joints below each link (file order) and the joint above each link;
    checks that the links form a tree."""
    links = {}
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise URDFError("a <link> has no name")
        if name in links:
            raise URDFError(f"link {name!r} is defined twice")
        links[name] = link
    if not links:
        raise URDFError("the URDF defines no <link>")
    children, parent_joint, names = {}, {}, set()
    for element in robot.findall("joint"):
        joint = read_joint(element, links)
        if joint.name in names:
            raise URDFError(f"joint {joint.name!r} is defined twice")
        names.add(joint.name)
        if joint.child in parent_joint:
            raise URDFError(
                f"joint {joint.name!r}: link {joint.child!r} already has a parent joint "
                f"{parent_joint[joint.child].name!r}; a tree has one parent per link"
            )
        parent_joint[joint.child] = joint
        children.setdefault(joint.parent, []).append(joint)
    rooted: set[str] = set()
    for start in links:  # following parents from any link must end at a root
        seen, link = {}, start  # ordered, for the message
        while link in parent_joint and link not in rooted:
            if link in seen:
                cycle = list(seen)[list(seen).index(link) :]
                raise URDFError(f"the links {cycle} form a loop; a URDF must be a tree")
            seen[link] = None
            link = parent_joint[link].parent
        rooted.update(seen)
    return links, children, parent_joint


def _root(links: dict, parent_joint: dict, root: str | None) -> str:
    if root is not None:
        if root not in links:
            raise URDFError(f"root link {root!r} is not defined; links are {list(links)}")
        return root
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        raise URDFError(f"a URDF must have one root link, found {roots}; choose one with root=...")
    return roots[0]


def _path(parent_joint: dict, root: str, tip: str, links: dict) -> set[str]:
    """Links on the chain from ``root`` to ``tip``."""
    if tip not in links:
        raise URDFError(f"tip link {tip!r} is not defined; links are {list(links)}")
    path, link = [tip], tip
    while link != root:
        if link not in parent_joint:
            raise URDFError(f"tip link {tip!r} is not below root link {root!r}")
        link = parent_joint[link].parent
        path.append(link)
    return set(path)


def load_urdf(
    source,
    root: str | None = None,
    tip: str | None = None,
    *,
    gravity=None,
    merge_fixed: bool = True,
    strict_limits: bool = False,
    floating_base: bool = False,
    mimic: str = "coupled",
    inertia: str = "repair",
) -> Model:
    """A kronjax :class:`~kronjax.chain.Model` from a URDF file or string.

    Args:
        source: a path to a ``.urdf`` file, or the URDF text itself.
        root: the link that becomes the fixed base (default: the URDF's root link). Gravity and all
            poses are expressed in its frame.
        tip: keep only the chain of moving joints from ``root`` to this link, with every link
            rigidly attached (by fixed joints) to its bodies (default: the whole tree below ``root``).
        gravity: gravitational acceleration in the root frame; URDF has none (default
            ``[0, 0, -9.81]``).
        merge_fixed: merge every link attached by a ``fixed`` joint into the moving link it hangs
            from, combining the inertials (parallel-axis theorem), as Pinocchio does; links fixed to
            the root belong to the base and are dropped. With ``False`` those links stay bodies of
            kind ``"F"`` (frames you can name in every kronjax function, e.g. a tool frame).
        strict_limits: keep degenerate ``<limit>`` values as written (see Returns).
        floating_base: put the root link on a free-flyer joint named ``"root_joint"`` (body 0,
            ``q[:7] = [x, y, z, qx, qy, qz, qw]``, ``v[:6]`` the root link's linear and angular
            velocity in its own frame), as Pinocchio's ``buildModelFromUrdf(path,
            JointModelFreeFlyer())``; the root link and the links fixed to it are then body 0
            instead of the base. A URDF ``floating`` joint is read as such a joint wherever it is.
        mimic: ``"coupled"`` (default): a joint with ``<mimic joint multiplier offset>`` follows
            ``multiplier * q_joint + offset`` and has no coordinate of its own (the dynamics are
            reduced accordingly: ``M = G^T M_full G``, ``tau = G^T tau_full``); ``"independent"``:
            the ``<mimic>`` element is ignored (Pinocchio 4.1's reading). A ``<mimic>`` that cannot
            couple anything is ignored either way, with a :class:`URDFWarning`: one on a fixed joint,
            and one that names no revolute, continuous or prismatic joint of the loaded model.
        inertia: ``"repair"`` (default): an ``<inertia>`` that is indefinite by rounding (its
            negative eigenvalue no larger than ``1e-6`` times the largest
            principal moment of any link of the file, as CAD exports write a tiny link's inertia
            with a few digits) gets its eigenvalues clipped at 0, which changes ``M`` by less than
            that, with one :class:`URDFWarning` naming each link and its eigenvalues;
            ``"strict"``: such an inertia is an error, as a grossly indefinite one always is.

    Returns:
        A model with one body per moving joint (``revolute`` and ``continuous`` become ``"R"``,
        ``prismatic`` ``"P"``, ``floating`` ``"free"``, ``planar`` ``"planar"``), named after the joint's child link, the joint names kept, the
        ``<limit>`` values in ``model.limits`` (``inf`` where absent, and where written as the
        largest double, as :func:`to_urdf` writes unlimited values; a continuous joint has no
        position limits). CAD exporters write ``lower="0" upper="0" effort="0" velocity="0"`` for
        "not set", so by default an empty or single-point position range (``lower >= upper``) and
        a zero velocity or effort limit are read as unlimited, with one ``UserWarning`` that names
        each such joint and what was dropped. With ``strict_limits=True`` they are kept: a
        single-point range locks the joint, a zero velocity keeps it still, a zero effort makes it
        passive (see :class:`~kronjax.chain.JointLimits`), and ``lower > upper`` is an error.
        ``<dynamics damping friction>`` of a revolute, continuous or prismatic joint (not a
        mimic) become ``model.damping`` and ``model.friction`` (viscous and Coulomb;
        :mod:`kronjax.passive`), as Pinocchio reads them (it ignores them on floating and
        planar joints). ``inertials`` is ``None`` when no link has an ``<inertial>``. A link with an
        ``<inertia>`` but mass 0 keeps that inertia where it is merged into a body with mass (as
        Pinocchio reads it) and loses it otherwise, with a warning. A moving joint that moves no
        mass at a random configuration (files without any ``<inertial>`` are not checked) loads
        with a :class:`URDFWarning` naming it: kinematics, inverse dynamics and ``M`` are defined,
        :func:`~kronjax.forward_dynamics` raises (``equinox.error_if``: its pivot is zero).

    Raises:
        URDFError: (a ``ValueError``) for malformed input, naming the element: XML syntax, an
            empty text, unknown joint types, a planar joint whose axis is not z, a ``<mimic>`` on a
            floating or planar joint, without ``joint``, or in a cycle, ``floating_base=True`` with
            a root link that already holds a link by a floating joint (two free-flyers), missing or
            undefined parent/child links, two parents for a link, loops, duplicate names,
            non-numeric or non-finite attributes (limits may be ``inf``), negative masses, inertias
            that are not positive semi-definite beyond ``inertia``'s repair, zero axes, negative
            velocity or effort limits, ``lower > upper`` with ``strict_limits=True``, placements,
            inertials or a mass matrix that overflow float64, no moving joint at all, and a mass
            matrix singular at a random configuration other than by a joint that moves no mass (a
            joint whose motion repeats the joints above it for all the mass it moves: forward
            dynamics would meet pivots at rounding level, which it cannot tell from small ones).
        FileNotFoundError: when ``source`` is a path to no file.

    Example:
        A pendulum from a URDF string: 2 kg at 0.5 m below a hinge about ``y``, ``I_yy = 0.1``
        about the centre of mass, so ``M = 2 * 0.5^2 + 0.1 = 0.6``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> urdf = '''
        ... <robot name="pendulum">
        ...   <link name="base"/>
        ...   <link name="arm">
        ...     <inertial>
        ...       <origin xyz="0 0 -0.5"/><mass value="2"/>
        ...       <inertia ixx="0.1" iyy="0.1" izz="0.01" ixy="0" ixz="0" iyz="0"/>
        ...     </inertial>
        ...   </link>
        ...   <joint name="hinge" type="revolute">
        ...     <parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
        ...     <limit lower="-1.5" upper="1.5" effort="10" velocity="2"/>
        ...   </joint>
        ... </robot>'''
        >>> model = kj.load_urdf(urdf)
        >>> model.body_names, model.joint_names, model.limits.upper.tolist(), model.limits.effort.tolist()
        (('arm',), ('hinge',), [1.5], [10.0])
        >>> print(np.round(float(kj.mass_matrix(model, jnp.zeros(1))[0, 0]), 6))
        0.6
    """
    if mimic not in ("coupled", "independent"):
        raise ValueError(f"mimic must be 'coupled' or 'independent', got {mimic!r}")
    if inertia not in ("repair", "strict"):
        raise ValueError(f"inertia must be 'repair' or 'strict', got {inertia!r}")
    robot = read_file(source)
    links, children, parent_joint = _tree(robot)
    root = _root(links, parent_joint, root)
    keep = _path(parent_joint, root, tip, links) if tip is not None else None
    masses, repaired = link_masses(links, inertia)
    has_inertials = any(link.find("inertial") is not None for link in links.values())
    primaries = _moving_joints(children, root, keep) if mimic == "coupled" else set()
    joints, body_mass, merged, odd = _walk(
        children,
        root,
        keep,
        masses,
        primaries,
        merge_fixed=merge_fixed,
        strict_limits=strict_limits,
        floating_base=floating_base,
        mimic=mimic,
    )
    if not joints:
        raise URDFError(
            f"no moving joint below root link {root!r}"
            + (f" on the way to {tip!r}" if tip else "")
            + ("" if floating_base else "; a robot that flies or floats: load with floating_base=True")
        )
    _warn_odd(odd, repaired)
    singular = None
    if has_inertials:
        for mass, names in zip(body_mass, merged):
            if not (np.isfinite(mass.mass) and np.all(np.isfinite(mass.com)) and np.all(np.isfinite(mass.inertia))):
                raise URDFError(f"links {names}: their combined inertial overflows float64")
        body_mass = _massless_inertias(body_mass, merged, masses)
        with np.errstate(over="ignore", invalid="ignore"):
            singular = singular_mass_matrix(joints, body_mass)
    inertials = None
    if has_inertials:
        inertials = [Inertial(mass=m.mass, com=m.com, inertia=m.inertia) for m in body_mass]
    try:
        model = from_joints(joints, inertials, gravity=gravity)
    except ValueError as err:
        raise URDFError(str(err)) from None
    if singular is not None:
        warn(
            f"load_urdf: the mass matrix is singular: {singular}. Kinematics, inverse dynamics, gravity "
            "and M itself are defined; forward_dynamics (which raises) and M^-1 are not. To simulate: "
            "give the joint a rotor inertia (model.armature, e.g. with equinox.tree_at), give a link "
            "below it an <inertial>, make it a fixed joint, or load a chain that ends above it (tip=...)"
        )
    return model


def _walk(
    children: dict,
    root: str,
    keep: set[str] | None,
    masses: dict[str, LinkMass],
    primaries: set[str],
    *,
    merge_fixed: bool,
    strict_limits: bool,
    floating_base: bool,
    mimic: str,
) -> tuple[list[Joint], list[LinkMass], list[list[str]], dict[str, list[str]]]:
    """The kronjax joints of the tree below ``root``, depth first with children in file order
    (parents before children, like Pinocchio): ``(joints, body_mass, merged, odd)``, each body's
    mass properties (its links' combined where ``merge_fixed`` merges a fixed link into the body it
    hangs from), the links that make up each body, and what :func:`_warn_odd` warns about. Off the
    ``keep`` chain a joint is left out, unless it rigidly attaches a link to one of the chain's
    bodies. The options are :func:`load_urdf`'s."""
    joints: list[Joint] = []
    body_mass: list[LinkMass] = []
    merged: list[list[str]] = []  # the links that make up each body
    odd: dict[str, list[str]] = {"axis": [], "degenerate": [], "fixed mimic": [], "lost mimic": []}  # for the warnings
    body_of: dict[str, tuple[int, np.ndarray]] = {root: (-1, np.eye(4))}
    if floating_base:
        joints.append(Joint(kind="free", name=ROOT_JOINT, body_name=root))
        body_mass.append(masses[root])
        merged.append([root])
        body_of[root] = (0, np.eye(4))
    stack = list(reversed(children.get(root, [])))
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked for by name (inertials: in load_urdf)
        while stack:  # depth first, children in file order: parents before children, like Pinocchio
            joint = stack.pop()
            stack.extend(reversed(children.get(joint.child, [])))
            if keep is not None and joint.child not in keep and (joint.kind != "fixed" or joint.parent not in body_of):
                continue  # off the chain, unless rigidly attached to one of its bodies
            parent_body, placement = body_of[joint.parent]
            to_child = placement @ joint.origin  # child link frame in the parent body's frame
            if not np.all(np.isfinite(to_child)):
                raise URDFError(f"joint {joint.name!r}: the placement of link {joint.child!r} overflows float64")
            if joint.fixed_mimic:
                odd["fixed mimic"].append(repr(joint.name))
            if joint.unit_axis is not None:
                odd["axis"].append(joint.unit_axis)
            if joint.kind == "fixed" and merge_fixed:
                body_of[joint.child] = (parent_body, to_child)
                if parent_body >= 0:
                    body_mass[parent_body] = body_mass[parent_body] + masses[joint.child].moved(to_child)
                    merged[parent_body].append(joint.child)
                continue
            joints.append(
                _joint(
                    joint,
                    parent_body,
                    to_child,
                    root,
                    primaries,
                    odd,
                    strict_limits=strict_limits,
                    floating_base=floating_base,
                    mimic=mimic,
                )
            )
            body_mass.append(masses[joint.child])
            merged.append([joint.child])
            body_of[joint.child] = (len(joints) - 1, np.eye(4))
    return joints, body_mass, merged, odd


def _joint(
    joint: UrdfJoint,
    parent_body: int,
    to_child: np.ndarray,
    root: str,
    primaries: set[str],
    odd: dict[str, list[str]],
    *,
    strict_limits: bool,
    floating_base: bool,
    mimic: str,
) -> Joint:
    """The kronjax joint of a URDF joint that makes a body (a moving one, or a fixed one that is not
    merged): its kind, placement ``to_child`` in the parent body's frame, limits and ``<dynamics>``
    (as Pinocchio, on revolute, continuous and prismatic joints only), and its ``<mimic>`` coupling
    where ``mimic="coupled"`` and the joint it follows is one of ``primaries``; the degenerate limits
    and the mimics it drops go to ``odd``. The options are :func:`load_urdf`'s."""
    limits = {}
    if joint.kind in MOVING_KINDS:  # <dynamics> too, as Pinocchio (not on fixed, floating, planar joints)
        limits, dropped = settled_limits(joint, strict_limits)
        limits |= joint.passive
        if dropped:
            odd["degenerate"].append(f"{joint.name!r} ({', '.join(dropped)})")
    if joint.kind in KIND_FROM_URDF:
        if floating_base and joint.kind == "floating" and parent_body == 0:
            raise URDFError(
                f"joint {joint.name!r}: the root link {root!r} already holds link {joint.child!r} by a "
                "floating joint; floating_base=True would add a second free-flyer: load with "
                "floating_base=False"
            )
        limits = {key: joint.limits[key] for key in ("velocity", "effort")}
    coupled = joint.mimic if mimic == "coupled" else None
    if coupled is not None and coupled[0] not in primaries:
        odd["lost mimic"].append(f"{joint.name!r} (<mimic joint={coupled[0]!r}>)")
        coupled = None
    if coupled is not None:
        limits = {}
    return Joint(
        mimic=coupled,
        kind=MOVING_KINDS.get(joint.kind) or KIND_FROM_URDF.get(joint.kind, "F"),
        parent=parent_body,
        axis=joint.axis if joint.kind in MOVING_KINDS else (0.0, 0.0, 1.0),
        rotation=to_child[:3, :3],
        translation=to_child[:3, 3],
        name=joint.name,
        body_name=joint.child,
        **limits,
    )


def _moving_joints(children: dict, root: str, keep: set[str] | None) -> set[str]:
    """The names of the revolute, continuous and prismatic joints of the loaded model (what a
    ``<mimic>`` may follow)."""
    names, stack = set(), list(children.get(root, []))
    while stack:
        joint = stack.pop()
        stack.extend(children.get(joint.child, []))
        if joint.kind in MOVING_KINDS and (keep is None or joint.child in keep):
            names.add(joint.name)
    return names


def _massless_inertias(body_mass: list[LinkMass], merged: list[list[str]], masses: dict[str, LinkMass]) -> list[LinkMass]:
    """Links with an ``<inertia>`` but mass 0 (a CAD export's foot or sensor): their rotational
    inertia is kept where they are merged into a body with mass (as Pinocchio keeps it) and dropped
    from a body without mass, which cannot carry one; one warning names them."""
    kept, dropped, out = [], [], []
    for mass, names in zip(body_mass, merged):
        odd = [name for name in names if masses[name].mass == 0 and np.any(masses[name].inertia)]
        if odd and mass.mass == 0:
            dropped += odd
            mass = LinkMass()
        else:
            kept += odd
        out.append(mass)
    if kept or dropped:
        warn(
            "load_urdf: links with an <inertia> but mass 0: "
            + "; ".join(
                f"{what} {names}"
                for what, names in (
                    ("kept (merged into a body with mass, as Pinocchio)", kept),
                    ("dropped (a body without mass)", dropped),
                )
                if names
            ),
            stacklevel=4,
        )
    return out


def _warn_odd(odd: dict[str, list[str]], repaired: list[str]) -> None:
    """One :class:`URDFWarning` per kind of oddity :func:`load_urdf` read past."""
    messages = {  # (what the items are, the message)
        "axis": ("joint", "axes that are not a unit vector normalised: joint {}"),
        "degenerate": (
            "joint",
            "degenerate <limit> values read as not set (unlimited), as CAD exporters write them: joint {}; "
            "strict_limits=True keeps them",
        ),
        "fixed mimic": (
            "joint",
            "a <mimic> on a fixed joint ignored (a fixed joint has nothing to couple; Pinocchio ignores it too): joint {}",
        ),
        "lost mimic": (
            "joint",
            "a <mimic> that names no revolute, continuous or prismatic joint of the loaded model ignored "
            "(the joint is independent, as in Pinocchio's default reading): joint {}",
        ),
        "repaired": (
            "link",
            f"an <inertia> indefinite by rounding (its negative eigenvalue below {REPAIRABLE:g} of the file's largest "
            "principal moment) repaired by clipping its eigenvalues at 0: link {}; inertia='strict' refuses it",
        ),
    }
    for key, items in (odd | {"repaired": repaired}).items():
        if items:
            noun, message = messages[key]
            warn("load_urdf: " + message.format(f", {noun} ".join(items)), stacklevel=4)
