"""What CAD exports and published files get wrong, and how ``load_urdf`` reads it (issue 36,
``docs/details/robots.md``): load what Pinocchio loads, say what is odd in one
:class:`kronjax.urdf.URDFWarning` per kind, never compute a wrong number silently.

One hand-written file per case of the issue (``tests/data/``, each reproducing a published file
of example-robot-data 6.0.0), every one checked against Pinocchio's model of the same file as
``tests/test_robot_zoo.py`` checks the published ones (:func:`zoo.check_against_pinocchio`: M,
inverse dynamics, gravity, ``C v``, forward dynamics where defined, every body's Jacobian):

1. ``fixed_mimic_gripper.urdf``: a ``<mimic>`` on a fixed joint is ignored (was an error);
2. ``floating_mimic_hand.urdf``: a floating base with coupled mimic fingers loads (was the false
   error "joint 'root_joint' moves no mass": the load-time check of ``M`` took every sub-joint of
   the free-flyer, which share its name, for the first);
3. ``massless_hand.urdf``: a joint that moves no mass loads with a warning naming it, and
   ``forward_dynamics`` raises (was an error at load time);
4. ``cad_antenna.urdf``: an inertia indefinite by rounding is repaired, its eigenvalues clipped at
   0 (was an error; ``inertia="strict"`` keeps the error), within the bound the docs state.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from zoo import Instance, check_against_pinocchio

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = Path(__file__).parent / "data"
FILES = {
    path.name: path
    for path in (DATA / f"{name}.urdf" for name in ("fixed_mimic_gripper", "floating_mimic_hand", "massless_hand", "cad_antenna"))
}


def _load(name: str, **kwargs) -> tuple[kj.Model, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = kj.load_urdf(FILES[name], **kwargs)
    assert all(w.category is kj.urdf.URDFWarning for w in caught), [str(w.message) for w in caught]
    return model, [str(w.message) for w in caught]


def test_a_mimic_on_a_fixed_joint_is_ignored_with_a_warning():
    for mimic in ("coupled", "independent"):
        model, caught = _load("fixed_mimic_gripper.urdf", mimic=mimic)
        assert caught == [
            "load_urdf: a <mimic> on a fixed joint ignored (a fixed joint has nothing to couple; Pinocchio "
            "ignores it too): joint 'gripper_inner_double_joint'"
        ]
        assert model.joint_names == ("shoulder", "elbow", "gripper_joint") and model.nv == 3
    check_against_pinocchio(FILES, Instance("fixed_mimic_gripper.urdf", floating=False, mimic="coupled"))


@pytest.mark.parametrize("mimic", ["coupled", pytest.param("independent", marks=pytest.mark.slow)])
def test_a_floating_base_with_coupled_mimic_fingers_loads_and_agrees_with_pinocchio(mimic):
    model, caught = _load("floating_mimic_hand.urdf", floating_base=True, mimic=mimic)
    assert caught == []
    assert (model.nq, model.nv) == ((7 + 7, 6 + 7) if mimic == "coupled" else (7 + 9, 6 + 9))
    # forward dynamics (a compilation as large as the rest) in the slow tier's instance, and on
    # TALOS' coupled grippers in tests/test_robot_zoo.py
    check_against_pinocchio(FILES, Instance("floating_mimic_hand.urdf", floating=True, mimic=mimic), forward=mimic != "coupled")


def test_a_joint_that_moves_no_mass_loads_with_a_warning_and_forward_dynamics_raises():
    model, caught = _load("massless_hand.urdf")
    (message,) = caught
    assert re.fullmatch(
        r"load_urdf: the mass matrix is singular: joint 'hand_close' \(M\[3, 3\] = 0, rounding errors of .*\) moves no "
        r"mass: .* forward_dynamics \(which raises\) and M\^-1 are not\. To simulate: give the joint a rotor inertia .*",
        message,
    ), message
    check_against_pinocchio(FILES, Instance("massless_hand.urdf", floating=False, mimic="coupled"))  # but forward dynamics
    q = np.array([0.1, -0.4, 0.3, 0.2])
    with pytest.raises(Exception, match="the mass matrix is not positive definite"):
        jax.block_until_ready(kj.forward_dynamics(model, q, q, q))
    # the remedy the warning names first: a rotor inertia on the joint makes M positive definite
    rotor = eqx.tree_at(lambda m: m.armature, model, jnp.array([0.0, 0.0, 0.0, 0.01]))
    qdd = kj.forward_dynamics(rotor, q, q, q)
    expected = np.linalg.solve(kj.mass_matrix(rotor, q), q - kj.inverse_dynamics(rotor, q, q, np.zeros(4)))
    np.testing.assert_allclose(qdd, expected, rtol=1e-10)


def test_an_inertia_indefinite_by_rounding_is_repaired_within_the_stated_bound():
    model, caught = _load("cad_antenna.urdf", floating_base=True)
    (message,) = caught
    assert message.startswith(
        "load_urdf: an <inertia> indefinite by rounding (its negative eigenvalue below 1e-06 of the file's largest "
        "principal moment) repaired by clipping its eigenvalues at 0: link 'antenna_link' (eigenvalues [-3.535e-08"
    ), message
    with pytest.raises(kj.urdf.URDFError, match=r"link 'antenna_link': <inertia> is not symmetric positive \(semi-\)definite"):
        kj.load_urdf(FILES["cad_antenna.urdf"], floating_base=True, inertia="strict")
    # the repair is the clip: the model equals that of the file with the clipped tensor written out,
    # which differs from the file's by the clipped eigenvalue (the nearest semi-definite tensor)
    text = FILES["cad_antenna.urdf"].read_text()
    written = re.search(r'<inertia ixx="0.00000002371"[^>]*/>', text).group(0)
    raw = np.array([[2.371e-8, 6.119e-8, 1.179e-8], [6.119e-8, 2.833e-8, 0.774e-8], [1.179e-8, 0.774e-8, 3.849e-8]])
    eig, vectors = np.linalg.eigh(raw)
    clipped = vectors @ np.diag(np.maximum(eig, 0.0)) @ vectors.T
    assert np.linalg.norm(clipped - raw, 2) <= -eig[0] * (1 + 1e-9) and eig[0] < 0
    values = dict(zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), (float(x) for x in clipped[np.triu_indices(3)])))
    element = "<inertia " + " ".join(f'{k}="{v!r}"' for k, v in values.items()) + "/>"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = kj.load_urdf(text.replace(written, element), floating_base=True)
    np.testing.assert_allclose(model.inertials.inertia, clean.inertials.inertia, rtol=0, atol=1e-20)
    check_against_pinocchio(FILES, Instance("cad_antenna.urdf", floating=True, mimic="coupled"))


def test_a_grossly_indefinite_inertia_stays_an_error_either_way():
    text = (
        FILES["cad_antenna.urdf"]
        .read_text()
        .replace('ixx="0.45"', 'ixx="0.45" ixy="0.5"', 1)
        .replace('ixy="0" ixz="0" iyy="0.5"', 'ixz="0" iyy="0.5"', 1)
    )
    for policy in ("repair", "strict"):
        with pytest.raises(kj.urdf.URDFError, match=r"link 'base_link': <inertia> is not symmetric positive"):
            kj.load_urdf(text, inertia=policy)
    with pytest.raises(ValueError, match="inertia must be 'repair' or 'strict'"):
        kj.load_urdf(text, inertia="clip")


def test_a_link_with_an_inertia_but_no_mass():
    """Kept where merged into a body with mass (as Pinocchio; example-robot-data's bolt.urdf feet),
    dropped from a body without mass, which cannot carry it."""
    text = FILES["massless_hand.urdf"].read_text()
    foot = '<link name="finger">\n    <inertial>\n      <mass value="0"/>\n      <inertia ixx="5.7e-7" ixy="0" ixz="0" iyy="8.4e-7" iyz="0" izz="5.3e-7"/>\n    </inertial>\n  </link>'
    hand = '<link name="hand">\n    <inertial>\n      <mass value="0.2"/>\n      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>\n    </inertial>\n  </link>'
    kept = text.replace('<link name="finger"/>', foot).replace('<link name="hand"/>', hand)
    with pytest.warns(
        kj.urdf.URDFWarning,
        match=r"links with an <inertia> but mass 0: kept \(merged into a body with mass, as Pinocchio\) \['finger'\]",
    ):
        model = kj.load_urdf(kept)
    np.testing.assert_allclose(
        np.diag(np.asarray(model.inertials.inertia[3])), [1e-4 + 5.7e-7, 1e-4 + 8.4e-7, 1e-4 + 5.3e-7], rtol=1e-12
    )
    dropped = text.replace('<link name="finger"/>', foot)
    with (
        pytest.warns(kj.urdf.URDFWarning, match=r"dropped \(a body without mass\) \['finger'\]"),
        pytest.warns(kj.urdf.URDFWarning, match=r"joint 'hand_close' .* moves no mass"),  # the hand is massless
    ):
        model = kj.load_urdf(dropped)
    assert not np.any(np.asarray(model.inertials.inertia[3]))
