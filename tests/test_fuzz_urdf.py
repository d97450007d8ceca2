"""Fuzzing ``load_urdf`` (issue 18): every mutation of the test URDFs ends in a sound model or in a
``URDFError`` naming the element, never in another exception, a hang or a silently wrong model.

The mutations start from the files in tests/data/ (one or two per example): delete or duplicate
an element or an attribute, replace one number by text, NaN, inf, -0, 1e308 and the like, a
negative mass, an indefinite inertia (URDF writes six values of a symmetric tensor, so a
non-symmetric one cannot be written; an ``iyx`` attribute is ignored), a zero or NaN axis, a
cycle, a duplicate name, a dangling parent, a chain of 500 more bodies, unicode names, truncated
text, an empty file and a binary one.

A model is sound when every numeric leaf is finite (limits: never NaN, ``inf`` only for "not
set"), the loader's per-body data is physical (unit axes, proper rotations, masses >= 0,
symmetric positive semi-definite inertias) and the mass matrix is symmetric positive definite at
random states. ``M`` comes from an independent oracle, fast per model (no kronjax compilation per
mutated model): ``M`` from the body Jacobians in NumPy and, up to 64 coordinates, Pinocchio's
``crba`` on ``to_urdf(model)`` (same number of coordinates; Pinocchio's ``createData`` takes
seconds at 500 joints). The slow test runs 1000 mutations (``KRONJAX_FUZZ_EXAMPLES`` for more) and prints how many ended in each
outcome; a fast one runs 50, and the crashes found are kept as plain regression cases.
"""

from __future__ import annotations

import collections
import copy
import os
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kronjax as kj
from kronjax.urdf import URDFError

DATA = Path(__file__).parent / "data"
SEEDS = {path.stem: path.read_text() for path in sorted(DATA.glob("*.urdf"))}
EXAMPLES = int(os.environ.get("KRONJAX_FUZZ_EXAMPLES", 1000))  # CI: 1000 (about 50 s); more by hand
# Jacobi-scaled Cholesky pivots below this: singular to working precision (the loader's criterion)
PIVOT_TOL = lambda n: 4 * n * np.finfo(float).eps  # noqa: E731
REPLACEMENTS = ("abc", "", "1,5", "0x10", "nan", "NaN", "inf", "-inf", "-0", "0", "1e308", "-1e308", "1e-308", "-1.5", "3 4")


# --------------------------------------------------------------------------------------------
# Mutations: functions of (the parsed robot, hypothesis' data) that change the robot in place,
# or return the text (or bytes) to load instead
# --------------------------------------------------------------------------------------------


def _elements(robot: ET.Element) -> list[tuple[ET.Element, ET.Element]]:
    """(parent, element) for every element below the root, in document order."""
    return [(parent, child) for parent in robot.iter() for child in parent]


def _numeric_attributes(robot: ET.Element) -> list[tuple[ET.Element, str]]:
    found = []
    for element in robot.iter():
        for key, value in element.attrib.items():
            try:
                [float(v) for v in value.split()]
            except ValueError:
                continue
            if value.split():
                found.append((element, key))
    return found


def delete_element(robot, data):
    parent, element = data.draw(st.sampled_from(_elements(robot)), label="element")
    parent.remove(element)


def duplicate_element(robot, data):
    parent, element = data.draw(st.sampled_from(_elements(robot)), label="element")
    parent.insert(list(parent).index(element) + 1, copy.deepcopy(element))


def delete_attribute(robot, data):
    element, key = data.draw(st.sampled_from([(e, k) for e in robot.iter() for k in e.attrib]), label="attribute")
    del element.attrib[key]


def duplicate_attribute(robot, data):
    """The same attribute twice in one tag (not well-formed XML), or copied to another element of
    the same tag (a second link or joint with the same name, another inertia value...)."""
    element, key = data.draw(st.sampled_from([(e, k) for e in robot.iter() for k in e.attrib]), label="attribute")
    if data.draw(st.booleans(), label="in the same tag"):
        text = ET.tostring(robot, encoding="unicode")
        target = f'{key}="{element.attrib[key]}"'.replace("&", "&amp;").replace("<", "&lt;")
        return text.replace(target, f"{target} {target}", 1)
    others = [e for e in robot.iter(element.tag) if e is not element]
    if others:
        data.draw(st.sampled_from(others), label="other").set(key, element.attrib[key])


def replace_number(robot, data):
    element, key = data.draw(st.sampled_from(_numeric_attributes(robot)), label="numeric attribute")
    values = element.attrib[key].split()
    k = data.draw(st.integers(0, len(values) - 1), label="which number")
    values[k] = data.draw(st.sampled_from(REPLACEMENTS) | st.floats().map(repr), label="replacement")
    element.set(key, " ".join(values))


def negative_mass(robot, data):
    masses = robot.findall("./link/inertial/mass")
    if masses:
        data.draw(st.sampled_from(masses), label="mass").set("value", repr(-data.draw(st.floats(0, 100), label="m")))


def indefinite_inertia(robot, data):
    """A product of inertia larger than the moments, or a negative moment."""
    tensors = robot.findall("./link/inertial/inertia")
    if not tensors:
        return
    inertia = data.draw(st.sampled_from(tensors), label="inertia")
    if data.draw(st.booleans(), label="off-diagonal"):
        big = 10 * max(abs(float(inertia.get(k, "1"))) for k in ("ixx", "iyy", "izz")) + 1
        inertia.set(data.draw(st.sampled_from(("ixy", "ixz", "iyz")), label="which"), repr(big))
    else:
        inertia.set(data.draw(st.sampled_from(("ixx", "iyy", "izz")), label="which"), "-0.5")
    inertia.set("iyx", "7")  # no URDF attribute: ignored


def bad_axis(robot, data):
    joints = robot.findall("joint")
    if not joints:
        return
    joint = data.draw(st.sampled_from(joints), label="joint")
    axis = joint.find("axis")
    if axis is None:
        axis = ET.SubElement(joint, "axis")
    axis.set(
        "xyz", data.draw(st.sampled_from(("0 0 0", "nan 0 1", "0 -0 0", "1e-13 0 0", "1e308 1e308 0", "inf 0 0")), label="axis")
    )


def _descendants(robot: ET.Element, link: str) -> list[str]:
    below, stack = [], [link]
    while stack:
        name = stack.pop()
        for joint in robot.findall("joint"):
            parent, child = joint.find("parent"), joint.find("child")
            if parent is not None and child is not None and parent.get("link") == name and child.get("link") not in below:
                below.append(child.get("link"))
                stack.append(child.get("link"))
    return below


def cycle(robot, data):
    """A joint's parent becomes its own child or one of the links below it."""
    joints = [j for j in robot.findall("joint") if j.find("parent") is not None and j.find("child") is not None]
    if not joints:
        return
    joint = data.draw(st.sampled_from(joints), label="joint")
    below = _descendants(robot, joint.find("child").get("link")) + [joint.find("child").get("link")]
    joint.find("parent").set("link", data.draw(st.sampled_from(below), label="new parent"))


def duplicate_name(robot, data):
    tag = data.draw(st.sampled_from(("link", "joint")), label="tag")
    elements = robot.findall(tag)
    if len(elements) >= 2:
        a, b = data.draw(st.permutations(elements), label="pair")[:2]
        a.set("name", b.get("name", ""))


def dangling_parent(robot, data):
    ends = robot.findall("./joint/parent") + robot.findall("./joint/child")
    if ends:
        data.draw(st.sampled_from(ends), label="end").set("link", "nowhere")


def rename_unicode(robot, data):
    """A link or joint gets a unicode name (references follow), possibly one that XML cannot hold."""
    tag = data.draw(st.sampled_from(("link", "joint")), label="tag")
    elements = robot.findall(tag)
    if not elements:
        return
    element = data.draw(st.sampled_from(elements), label="element")
    old, new = element.get("name"), data.draw(st.text(min_size=0, max_size=12), label="name")
    element.set("name", new)
    if tag == "link":
        for end in robot.findall("./joint/parent") + robot.findall("./joint/child"):
            if end.get("link") == old:
                end.set("link", new)


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(values))


def long_chain(robot, data, length: int = 500):
    """``length`` more bodies in a chain below a random link: random joint kinds, axes, origins
    and inertials (positive definite), the names unique."""
    links = [link.get("name") for link in robot.findall("link") if link.get("name")]
    if not links:
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    parent = data.draw(st.sampled_from(links), label="attach to")
    for i in range(length):
        name = f"chain_link_{i}"
        link = ET.SubElement(robot, "link", name=name)
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz=_fmt(rng.uniform(-0.05, 0.05, 3)))
        ET.SubElement(inertial, "mass", value=_fmt(rng.uniform(0.1, 2.0)))
        a = rng.normal(size=(3, 3))
        c = a @ a.T / 100 + 1e-3 * np.eye(3)
        ET.SubElement(
            inertial,
            "inertia",
            **{
                k: _fmt(c[p, q])
                for k, (p, q) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)))
            },
        )
        kind = rng.choice(["revolute", "continuous", "prismatic", "fixed"], p=[0.4, 0.3, 0.2, 0.1])
        joint = ET.SubElement(robot, "joint", name=f"chain_joint_{i}", type=str(kind))
        ET.SubElement(joint, "parent", link=parent)
        ET.SubElement(joint, "child", link=name)
        ET.SubElement(joint, "origin", xyz=_fmt(rng.uniform(-0.1, 0.1, 3)), rpy=_fmt(rng.uniform(-3, 3, 3)))
        axis = rng.normal(size=3)
        ET.SubElement(joint, "axis", xyz=_fmt(axis / np.linalg.norm(axis)))
        ET.SubElement(joint, "limit", lower="-2", upper="2", effort="10", velocity="3")
        parent = name


def truncate(robot, data):
    text = ET.tostring(robot, encoding="unicode")
    return text[: data.draw(st.integers(0, len(text)), label="cut")]


def empty_file(robot, data):
    return data.draw(st.sampled_from(("", "   \n", b"", '<?xml version="1.0"?>')), label="empty")


def binary_file(robot, data):
    blob = data.draw(st.binary(min_size=1, max_size=200), label="bytes")
    return data.draw(st.sampled_from((blob, b"<" + blob, b"<robot>" + blob)), label="framing")


MUTATIONS = [
    delete_element,
    duplicate_element,
    delete_attribute,
    duplicate_attribute,
    replace_number,
    negative_mass,
    indefinite_inertia,
    bad_axis,
    cycle,
    duplicate_name,
    dangling_parent,
    rename_unicode,
    truncate,
    empty_file,
    binary_file,
]
LONG_CHAINS = 40  # one example in about this many grows a 500-body chain first (~2 s each)


def mutate(data) -> tuple[str, str | bytes]:
    """A seed file, maybe with a long chain, and one or two mutations: (their description, the
    text or bytes to load)."""
    seed = data.draw(st.sampled_from(sorted(SEEDS)), label="seed")
    robot = ET.fromstring(SEEDS[seed])
    done = []
    if data.draw(st.sampled_from([False] * (LONG_CHAINS - 1) + [True]), label="long chain"):
        long_chain(robot, data)
        done.append("long_chain")
    for _ in range(data.draw(st.sampled_from([1, 1, 1, 2]), label="mutations") - bool(done)):
        mutation = data.draw(st.sampled_from(MUTATIONS), label="mutation")
        done.append(mutation.__name__)
        source = mutation(robot, data)
        if source is not None:
            return f"{seed}: {', '.join(done)}", source
    return f"{seed}: {', '.join(done)}", ET.tostring(robot, encoding="unicode")


# --------------------------------------------------------------------------------------------
# Outcomes
# --------------------------------------------------------------------------------------------


def message_class(message: str) -> str:
    """The error message without names and numbers, for the report."""
    message = re.sub(r"\[[^\]]*\]", "[…]", message)
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    message = re.sub(r"-?\d+(\.\d*)?(e[-+]?\d+)?|nan|inf", "#", message)
    return message[:90]


def check_model(model: kj.Model, singular: bool = False) -> None:
    """Finite leaves, physical per-body data, M symmetric positive definite (Pinocchio), or
    singular to working precision where the loader warned that it is (``singular``)."""
    tree = model.kinematics
    leaves = [tree.axes, tree.pre_rotation, tree.pre_translation, tree.post_rotation, tree.post_translation, model.gravity]
    if model.inertials is not None:
        leaves += [model.inertials.mass, model.inertials.com, model.inertials.inertia]
    for leaf in leaves:
        assert np.all(np.isfinite(np.asarray(leaf))), leaf
    lower, upper, velocity, effort = (
        np.asarray(x) for x in (model.limits.lower, model.limits.upper, model.limits.velocity, model.limits.effort)
    )
    assert np.all(lower < upper) and np.all(lower < np.inf) and np.all(upper > -np.inf), (lower, upper)
    assert np.all(velocity > 0) and np.all(effort > 0), (velocity, effort)  # 0 is "not set" by default
    moving = [i for i, kind in enumerate(tree.kinds) if kind != "F"]
    np.testing.assert_allclose(np.linalg.norm(np.asarray(tree.axes)[moving], axis=1), 1.0, atol=1e-12)
    r = np.asarray(tree.pre_rotation)
    np.testing.assert_allclose(np.einsum("bji,bjk->bik", r, r), np.broadcast_to(np.eye(3), r.shape), atol=1e-9)
    assert np.all(np.linalg.det(r) > 0)
    if model.inertials is None:
        return
    mass, inertia = np.asarray(model.inertials.mass), np.asarray(model.inertials.inertia)
    assert np.all(mass >= 0)
    np.testing.assert_array_equal(inertia, np.swapaxes(inertia, 1, 2))
    assert np.all(np.linalg.eigvalsh(inertia)[:, 0] >= -1e-10 * np.maximum(1.0, np.abs(inertia).max(axis=(1, 2))))
    assert np.all((mass > 0) | ~np.any(inertia, axis=(1, 2)))
    check_mass_matrix(model, singular=singular)


def smallest_scaled_pivot(m: np.ndarray) -> float:
    """The smallest pivot of the Jacobi-scaled Cholesky factorisation of a finite ``m``; 0 where
    a diagonal entry is not positive or the factorisation fails."""
    assert np.all(np.isfinite(m)), m
    d = np.diag(m)
    if not np.all(d > 0):
        return 0.0
    try:
        factor = np.linalg.cholesky(m / np.sqrt(d)[:, None] / np.sqrt(d)[None, :])
    except np.linalg.LinAlgError:
        return 0.0
    return float(np.min(np.diag(factor) ** 2))


def assert_positive_definite(m: np.ndarray, singular: bool = False) -> None:
    """No pivot below the loader's threshold (singular to working precision), with a margin;
    with ``singular``, one below it (the loader's warning was true)."""
    pivot = smallest_scaled_pivot(m)
    if singular:
        assert pivot < 10 * PIVOT_TOL(len(m)), pivot
    else:
        assert pivot >= PIVOT_TOL(len(m)) / 10, pivot


def mimic_reduction(model: kj.Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates of every moving joint (mimic joints independent: the *full* ones) at ``q``,
    and ``G`` with ``v_full = G v`` (the identity without mimic joints)."""
    tree = model.kinematics
    moving = [b for b, kind in enumerate(tree.kinds) if kind != "F"]
    g = np.zeros((len(moving), model.nv))
    offset = np.zeros(len(moving))
    for f, b in enumerate(moving):
        primary, multiplier, shift = tree.mimic[b] if tree.mimic and tree.mimic[b] else (b, 1.0, 0.0)
        g[f, tree.q_index[primary]], offset[f] = multiplier, shift
    return g @ q + offset, g


def jacobian_mass_matrix(model: kj.Model, q: np.ndarray) -> np.ndarray:
    """``M = sum_b m_b Jv_b^T Jv_b + Jw_b^T (R I R^T)_b Jw_b`` from the model's leaves, with the
    world-frame Jacobians of each body's centre of mass and rotation, in NumPy: the oracle for
    models too large for Pinocchio's ``createData`` (seconds at 500 joints). In the full
    coordinates of :func:`mimic_reduction` (``q`` of that length)."""
    tree = model.kinematics
    axes, pre_r, pre_p, post_r, post_p = (
        np.asarray(x) for x in (tree.axes, tree.pre_rotation, tree.pre_translation, tree.post_rotation, tree.post_translation)
    )
    mass, com, inertia = (np.asarray(x) for x in (model.inertials.mass, model.inertials.com, model.inertials.inertia))
    full = np.cumsum([kind != "F" for kind in tree.kinds]) - 1  # the full coordinate of each moving body
    nb, n = tree.n_bodies, len(q)
    rot, pos = np.empty((nb, 3, 3)), np.empty((nb, 3))
    world_axis, pivot = np.zeros((n, 3)), np.zeros((n, 3))
    revolute = np.zeros(n, bool)
    ancestor = np.zeros((nb, n), bool)  # [b, k]: coordinate k moves body b
    for b, (parent, kind, k) in enumerate(zip(tree.parents, tree.kinds, full)):
        r0, p0 = (np.eye(3), np.zeros(3)) if parent < 0 else (rot[parent], pos[parent])
        if parent >= 0:
            ancestor[b] = ancestor[parent]
        r, p = r0 @ pre_r[b], p0 + r0 @ pre_p[b]
        joint_r, joint_p = np.eye(3), np.zeros(3)
        if kind != "F":
            ancestor[b, k], world_axis[k], pivot[k], revolute[k] = True, r @ axes[b], p, kind == "R"
            a = axes[b]
            skew = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
            if kind == "R":
                joint_r = np.eye(3) + np.sin(q[k]) * skew + (1 - np.cos(q[k])) * skew @ skew
            else:
                joint_p = a * q[k]
        rot[b], pos[b] = r @ joint_r @ post_r[b], p + r @ (joint_p + joint_r @ post_p[b])
    centres = pos + np.einsum("bij,bj->bi", rot, com)
    lever = centres[:, None, :] - pivot[None, :, :]  # (nb, n, 3)
    jv = np.where(revolute[None, :, None], np.cross(world_axis[None], lever), world_axis[None])
    jv = np.where(ancestor[:, :, None], jv, 0.0)  # (nb, n, 3)
    jw = np.where((ancestor & revolute[None])[:, :, None], world_axis[None], 0.0)
    world_inertia = np.einsum("bij,bjk,blk->bil", rot, inertia, rot)
    # eigh of entries near the largest double overflows (NaN): factor a scaled copy
    scale = np.abs(world_inertia).max(axis=(1, 2))
    scale = np.where(scale > 0, scale, 1.0)
    w, v = np.linalg.eigh(world_inertia / scale[:, None, None])
    root = np.einsum("bij,bj,bkj->bik", v, np.sqrt(np.maximum(w, 0.0)), v) * np.sqrt(scale)[:, None, None]  # (R I R^T)^(1/2)
    rows = np.concatenate([np.sqrt(mass)[:, None, None] * jv, np.einsum("bij,bkj->bki", root, jw)], axis=2)
    rows = rows.transpose(0, 2, 1).reshape(-1, n)  # (6 nb, n)
    return rows.T @ rows


def check_mass_matrix(model: kj.Model, states: int = 3, singular: bool = False) -> None:
    """M at random q: from the leaves (jacobian_mass_matrix) and, for models of up to 64
    coordinates, from Pinocchio's CRBA on to_urdf(model) (which reads mimic joints as
    independent: compared in the full coordinates); both positive definite (singular where the
    loader warned so: ``singular``), and equal."""
    rng = np.random.default_rng(0)
    qs, reductions = zip(*(mimic_reduction(model, q) for q in rng.uniform(-np.pi, np.pi, (states, model.nv))))
    ours = [jacobian_mass_matrix(model, q) for q in qs]
    for m, g in zip(ours, reductions):
        assert_positive_definite(g.T @ m @ g, singular)
    if len(qs[0]) > 64:
        return
    pm = pin.buildModelFromXML(kj.to_urdf(model))
    assert pm.nv == len(qs[0])
    data = pm.createData()
    names = [name for name, kind in zip(model.joint_names, model.kinematics.kinds) if kind != "F"]
    ids = [pm.getJointId(name) for name in names]
    idx_q, nq, idx_v = (np.array(x)[ids] for x in (pm.idx_qs, pm.nqs, pm.idx_vs))  # pm.joints copies them all
    one, two = nq == 1, nq == 2  # continuous joints: (cos, sin)
    for q, m in zip(qs, ours):
        q_pin = pin.neutral(pm)
        q_pin[idx_q[one]] = q[one]
        q_pin[idx_q[two]], q_pin[idx_q[two] + 1] = np.cos(q[two]), np.sin(q[two])
        upper = np.triu(pin.crba(pm, data, q_pin))
        theirs = (upper + upper.T - np.diag(np.diag(upper)))[np.ix_(idx_v, idx_v)]
        if not model.kinematics.has_mimic:  # the loader checks the reduced matrix only
            assert_positive_definite(theirs, singular)
        # a massless link that only a mimic joint moves has a zero diagonal in the full
        # coordinates (a finger whose inertial was deleted): a floor relative to the largest
        diagonal = np.diag(theirs)
        d = np.sqrt(np.maximum(diagonal, 1e-12 * np.max(diagonal)))
        assert np.max(np.abs(m - theirs) / d[:, None] / d[None, :]) < 1e-9


def outcome(source) -> str:
    """Load ``source``; "model" for a sound model, the error's message class for a URDFError
    naming an element; any other exception propagates (a failure)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", kj.urdf.URDFWarning)  # non-unit axes, degenerate limits, a singular M, repairs
        # NumPy's overflow in the loader: never left unchecked (kronjax/chain/_inertials.py's _check_inertial has its own)
        warnings.filterwarnings("error", category=RuntimeWarning, module=r"kronjax\.urdf")
        try:
            model = kj.load_urdf(source)
        except URDFError as err:
            message = str(err)
            assert re.search(r"\b(link|links|joint|XML|URDF)\b|<\w+", message), message
            return "URDFError: " + message_class(message)
    singular = [str(w.message) for w in caught if "the mass matrix is singular" in str(w.message)]
    assert all(re.search(r"\bjoints? '", message) for message in singular), singular  # naming the joint
    check_model(model, singular=bool(singular))
    return "model, singular M (warned)" if singular else "model"


def fuzz(examples: int) -> tuple[collections.Counter, int]:
    """The outcomes of ``examples`` mutated files, and how many of them grew a long chain."""
    outcomes, chains = collections.Counter(), []

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(st.data())
    def one(data):
        what, source = mutate(data)
        data.draw(st.just(what), label="mutated")  # shown with a failing example
        outcomes[outcome(source)] += 1
        chains.append("long_chain" in what)

    one()
    return outcomes, sum(chains)


def test_an_inertia_near_the_largest_double_loads_and_matches_the_oracles():
    """A case the fuzzer found (CI, 2026-11-25): cad_pendulum's second link with ``ixx`` set to
    the largest double. The loader keeps it (M stays finite: 1.6e305 on the diagonal) and M
    matches the Jacobian oracle and Pinocchio; the oracle's own eigh once overflowed to NaN."""
    text = SEEDS["cad_pendulum"]
    second = list(re.finditer(r'ixx="[^"]*"', text))[1].span()
    model = kj.load_urdf(text[: second[0]] + 'ixx="1.7976931348623157e+308"' + text[second[1] :])
    assert np.asarray(model.inertials.inertia)[0, 0, 0] > 1e308
    check_model(model)


def test_a_mimic_finger_without_an_inertial_loads_and_matches_the_oracles():
    """A case the fuzzer found (CI, 2026-11-25): mimic_hand with the inertial of a finger deleted.
    The finger is massless and moved only by its mimic joint, so M in the full coordinates has a
    zero row and column; M still matches the Jacobian oracle and Pinocchio (whose comparison once
    divided by that zero diagonal), and the reduced M is positive definite."""
    robot = ET.fromstring(SEEDS["mimic_hand"])
    (finger,) = [link for link in robot.findall("link") if link.get("name") == "panda_leftfinger"]
    finger.remove(finger.find("inertial"))
    model = kj.load_urdf(ET.tostring(robot, encoding="unicode"))
    assert model.kinematics.has_mimic and float(model.inertials.mass[model.body_index("panda_leftfinger")]) == 0.0
    check_model(model)


@pytest.mark.slow
@pytest.mark.usefixtures("without_shape_checks")  # +45% on the loader's per-number helpers; the fast tier's 50 keep them
def test_fuzzed_urdfs_load_soundly_or_raise_a_urdf_error(capsys):
    outcomes, chains = fuzz(EXAMPLES)
    with capsys.disabled():
        print(f"\n{sum(outcomes.values())} mutated URDFs ({chains} with a chain of 500 more bodies):")
        for what, count in outcomes.most_common():
            print(f"{count:6d}  {what}")
    assert sum(outcomes.values()) >= EXAMPLES
    assert outcomes["model"] > 0.05 * EXAMPLES  # the mutations do not all end in errors


# --------------------------------------------------------------------------------------------
# Regressions: what the fuzzing (and its cases written out) found in the loader as it was
# --------------------------------------------------------------------------------------------


def _link(name, mass="1", com="0 0 0", inertia="0.1 0 0 0.1 0 0.1"):
    values = " ".join(f'{k}="{v}"' for k, v in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), inertia.split()))
    return f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia {values}/></inertial></link>'


def _joint(
    name,
    parent,
    child,
    kind="revolute",
    xyz="0 0 0.3",
    rpy="0 0 0",
    axis="0 0 1",
    limit='<limit lower="-1" upper="1" effort="1" velocity="1"/>',
):
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>'
    )


def _robot(*parts):
    return '<robot name="r"><link name="base"/>' + "".join(parts) + "</robot>"


MASSLESS_LEAF = _robot(_link("a"), '<link name="b"/>', _joint("j", "base", "a"), _joint("k", "a", "b", xyz="0.3 0 0"))
POINT_MASS_ON_AXIS = _robot(
    _link("a"), _link("b", inertia="0 0 0 0 0 0"), _joint("j", "base", "a"), _joint("k", "a", "b", axis="1 0 0", xyz="0.3 0 0")
)
COAXIAL = _robot('<link name="a"/>', _link("b", com="0.2 0 0"), _joint("j", "base", "a"), _joint("k", "a", "b", xyz="0 0 0"))

# (source, the URDFError message); the loader before issue 18 raised another exception or
# returned a model with a singular or infinite M
REGRESSIONS = {
    "empty text (was FileNotFoundError)": ("", r"the URDF text is empty"),
    "binary file (was UnicodeDecodeError)": (bytes(range(256)), r"malformed XML: not well-formed"),
    "unpaired surrogate in a name (was UnicodeEncodeError)": (
        _robot(_link("a\ud800"), _joint("j", "base", "a\ud800")),
        r"malformed XML: .*surrogates not allowed",
    ),
    "coaxial joints with no mass between (was a singular M)": (
        COAXIAL,
        r"joint 'k': the mass matrix is singular to working precision",
    ),
    "mass 1e308 (was an infinite M)": (
        _robot(_link("a", mass="1e308", com="1 1 0"), _link("b", com="0.5 0 0"), _joint("j", "base", "a"), _joint("k", "a", "b")),
        r"joint 'j': its column of the mass matrix overflows float64",
    ),
    "mass 1e308 merged": (
        _robot(
            _link("a", com="1 0 0"),
            _link("b", mass="1e308", com="2 0 0"),
            _joint("j", "base", "a"),
            _joint("f", "a", "b", kind="fixed"),
        ),
        r"links \['a', 'b'\]: their combined inertial overflows float64",
    ),
    "origins 1e308 in a row": (
        _robot(
            _link("a"),
            _link("b"),
            _link("c"),
            _joint("j", "base", "a"),
            _joint("f", "a", "b", kind="fixed", xyz="1e308 0 0"),
            _joint("k", "b", "c", xyz="1e308 0 0"),
        ),
        r"joint 'k': the placement of link 'c' overflows float64",
    ),
    "inf rpy (was named by body index)": (
        _robot(_link("a"), _joint("j", "base", "a", rpy="inf 0 0")),
        r"joint 'j': <origin rpy='inf 0 0'> is not finite",
    ),
    "inertial at 1.7e308 (was an infinite centre of mass)": (
        _robot(
            '<link name="a"><inertial><origin xyz="1.7e308 1.7e308 0" rpy="0 0 0.7"/><mass value="1"/>'
            '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>',
            _joint("j", "base", "a"),
        ),
        r"joint 'j': its column of the mass matrix overflows float64",
    ),
    "inf inertia": (
        _robot(_link("a", inertia="inf 0 0 0.1 0 0.1"), _joint("j", "base", "a")),
        r"link 'a': <inertia ixx='inf'> is not finite",
    ),
}


@pytest.mark.parametrize("case", sorted(REGRESSIONS))
def test_regressions_end_in_a_urdf_error_naming_the_element(case):
    source, match = REGRESSIONS[case]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning, module=r"kronjax\.urdf")
        with pytest.raises(URDFError, match=match):
            kj.load_urdf(source)


SINGULAR = {  # (source, the warning) for files with a joint that moves no mass: errors before issue 36
    "massless leaf": (MASSLESS_LEAF, r"the mass matrix is singular: joint 'k' \(M\[1, 1\] = 0, .*\) moves no mass"),
    "point mass on axis": (POINT_MASS_ON_AXIS, r"the mass matrix is singular: joint 'k' .* moves no mass"),
}


@pytest.mark.parametrize("case", sorted(SINGULAR))
def test_massless_joints_load_with_a_warning_and_forward_dynamics_raises(case):
    """Pinocchio loads such files, so kronjax does (issue 36), warning with the joint's name; the
    oracle for the warning is Pinocchio's M of the same file at random q (singular), and
    ``forward_dynamics`` fails loudly (``equinox.error_if``) rather than return a number."""
    text, match = SINGULAR[case]
    with pytest.warns(kj.urdf.URDFWarning, match=match):
        model = kj.load_urdf(text)
    pm = pin.buildModelFromXML(text)
    data = pm.createData()
    for q in np.random.default_rng(1).uniform(-np.pi, np.pi, (3, pm.nq)):
        m = pin.crba(pm, data, q)
        m = np.triu(m) + np.triu(m, 1).T
        assert np.linalg.eigvalsh(m)[0] < 1e-14 * np.linalg.eigvalsh(m)[-1]
    check_model(model, singular=True)
    q = np.full(model.nq, 0.3)
    with pytest.raises(Exception, match="not positive definite"):
        jax.block_until_ready(kj.forward_dynamics(model, q, q, q))


def test_an_inertia_of_1e308_loads_with_its_mass_matrix():
    """Was a RuntimeWarning (overflow in the symmetrisation of the rotated inertia) and then a
    mass matrix "singular to working precision" (the Jacobi scaling sqrt(d d^T) overflowed):
    the one coordinate's M is a^T (R I R^T) a, written out here."""
    text = _robot(
        '<link name="a"><inertial><origin rpy="0.3 0.2 0.1"/><mass value="1"/>'
        '<inertia ixx="1e308" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>',
        _joint("j", "base", "a", kind="continuous", limit=""),
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning, module=r"kronjax\.urdf")
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"kronjax\.chain")  # its own overflow
        model = kj.load_urdf(text)
    r = _rpy(0.3, 0.2, 0.1)
    expected = (r @ np.diag([1e308, 0.1, 0.1]) @ r.T)[2, 2]
    assert abs(float(jacobian_mass_matrix(model, np.array([0.4]))[0, 0]) - expected) < 1e-12 * expected


def _rpy(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    return (
        np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
        @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
        @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    )


def test_regressions_that_now_load():
    """A byte-order mark before the text (was read as a file name); an axis (1e308, 1e308, 0)
    (its norm overflowed: was "axis must be non-zero"); merged inertias symmetric to the bit (were
    not, by rounding, after rotation into the body frame)."""
    text = _robot(_link("a"), _joint("j", "base", "a", axis="1e308 1e308 0"))
    with pytest.warns(kj.urdf.URDFWarning, match="not a unit vector"):
        model = kj.load_urdf("\ufeff" + text)
    np.testing.assert_allclose(model.kinematics.axes[0], [2**-0.5, 2**-0.5, 0.0], rtol=1e-15)
    for seed in SEEDS.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            inertia = np.asarray(kj.load_urdf(seed).inertials.inertia)
        np.testing.assert_array_equal(inertia, np.swapaxes(inertia, 1, 2))


def test_a_small_fuzz_run_in_the_fast_tier():
    """50 mutations (the full run is marked slow): the same checks, so a crash shows in make test."""
    outcomes, _ = fuzz(50)
    assert sum(outcomes.values()) == 50 and outcomes["model"] > 0
