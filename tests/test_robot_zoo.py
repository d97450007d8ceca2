"""Every robot description of ``example-robot-data`` 6.0.0 (issue 36; :mod:`zoo`): kronjax loads
what Pinocchio loads, and its dynamics agree with Pinocchio's model of the same file.

* Loading (NumPy only; the floating base in the fast tier): every file with a fixed base and with a floating base, and
  ``mimic`` both ways where it has ``<mimic>`` elements: all load but the refusals of
  :data:`REFUSED`, each a file no physical reading of which exists (Pinocchio refuses the first;
  the second's inertia is 22 % indefinite), and every warning is a :class:`kronjax.urdf.URDFWarning`.
* Agreement (the UR5 in the fast tier, the rest slow): at 3 random states of each way
  :func:`zoo.instances` loads each file, M, inverse dynamics, gravity, ``C v``, forward dynamics
  (where ``M`` is positive definite, on one robot of each kind: :data:`FORWARD`) and every body's Jacobian ``[J_T; J_R]`` (Pinocchio's
  LOCAL_WORLD_ALIGNED) within 1e-10 of Pinocchio's, relative to the largest entry. Where the loader
  repaired an indefinite inertia (:func:`zoo._repaired_inertia` of the file, ``r`` kg m^2), M,
  inverse dynamics and ``C v`` may differ by ``10 r (1 + |v|^2 + |a|_1)``, which the check allows
  (gravity and the Jacobians may not differ at all); forward dynamics is then checked through
  Pinocchio's equation of motion rather than its ``M^-1``.

The models go through one compiled function as arguments, with the body and joint names replaced,
so that files of the same tree structure (the UR arms, the quadrupeds) share one compilation.
"""

from __future__ import annotations

import collections
import re
import warnings

import pytest
from zoo import check_against_pinocchio, instances, zoo_files

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

FILES = zoo_files()
if not FILES:
    pytest.skip("example-robot-data is not installed (pip install 'kronjax[test]')", allow_module_level=True)

# (file, floating base) -> the URDFError's message; None for both bases
REFUSED = {
    ("ur_description/urdf/ur3.urdf", None): r"the URDF defines no <link>",  # a xacro stub: Pinocchio refuses it too
    ("romeo_description/urdf/romeo_laas_small.urdf", None): (
        r"link 'body': <inertia> is not symmetric positive \(semi-\)definite: eigenvalues \[-0.0213\d* .*the smallest is 0.22 of"
    ),
    ("hector_description/robots/quadrotor_base.urdf", False): r"no moving joint below root link .*floating_base=True",
    ("iris_description/robots/iris_simple.urdf", False): r"no moving joint below root link .*floating_base=True",
}
INSTANCES = [i for i in instances(FILES) if (i.name, None) not in REFUSED and (i.name, i.floating) not in REFUSED]
SECOND_HALF = "icub_description"  # the first package of the second half of the slow tier's instances
FAST = {"ur_description/urdf/ur5_robot.urdf"}  # and tests/test_urdf_repairs.py's floating hand, in make test
# forward dynamics, whose compilation is most of each structure's (6-9 s at XLA's optimisation level
# 0 for a quadruped: issue 40), on one robot of each kind; M and inverse dynamics, which determine
# it, on every one
FORWARD = {
    "ur_description/urdf/ur5_robot.urdf",  # an arm
    "hector_description/robots/quadrotor_base.urdf",  # a free body
    "solo_description/robots/solo12.urdf",  # a quadruped
    "g1_description/urdf/g1_29dof_rev_1_0.urdf",  # a humanoid
    "panda_description/urdf/panda.urdf",  # coupled mimic fingers (Pinocchio's M solved)
}  # and tests/test_urdf_repairs.py's: a repaired inertia, a mimic on a fixed joint, a floating hand
# the independent reading (Pinocchio's own) of the largest files with mimic joints, 20-35 s each to
# compile: in the extended tier (make test-extended); their coupled reading and the smaller files'
# independent one are in CI
EXTENDED = {
    "talos_data/robots/talos_full_v2.urdf",
    "talos_data/robots/talos_full_v2_box.urdf",
    "tiago_pro_description/robots/tiago_pro.urdf",
    "pr2_description/urdf/pr2.urdf",
    "romeo_description/urdf/romeo.urdf",
}


def slow_tier(instances: list, first_half: bool) -> list:
    """The slow tier's instances of one half (``tests/test_robot_zoo_second_half.py`` has the
    second, so that the halves run on two workers), the extended ones marked."""
    return [
        pytest.param(i, marks=pytest.mark.extended, id=i.id)
        if i.mimic == "independent" and i.name in EXTENDED
        else pytest.param(i, id=i.id)
        for i in instances
        if i.name not in FAST and (i.name < SECOND_HALF) == first_half
    ]


@pytest.mark.usefixtures("without_shape_checks")  # the loader's per-number helpers, 2x faster
@pytest.mark.parametrize("floating", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["floating", "fixed"])
def test_every_file_loads_or_is_refused_as_listed(floating, capsys):
    outcomes, refused = collections.Counter(), {}
    for name, path in FILES.items():
        mimics = ("coupled", "independent") if "<mimic" in path.read_text() else ("coupled",)
        for mimic in mimics:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    kj.load_urdf(path, floating_base=floating, mimic=mimic)
                except kj.urdf.URDFError as err:
                    refused[(name, floating)] = str(err)
                    outcomes["refused"] += 1
                    continue
            assert all(issubclass(w.category, kj.urdf.URDFWarning) for w in caught), [str(w.message) for w in caught]
            outcomes["loaded, warned" if caught else "loaded"] += 1
    for (name, floating), message in refused.items():
        match = REFUSED.get((name, None), REFUSED.get((name, floating)))
        assert match is not None and re.search(match, message), (name, floating, message)
    assert sorted(refused) == sorted((n, floating) for n, base in REFUSED if base in (None, floating))
    with capsys.disabled():
        base = "a floating" if floating else "a fixed"
        print(f"\n{len(FILES)} URDFs of example-robot-data with {base} base, {sum(outcomes.values())} loads: {dict(outcomes)}")


@pytest.mark.parametrize("instance", [i for i in INSTANCES if i.name in FAST], ids=lambda i: i.id)
def test_representatives_agree_with_pinocchio(instance):
    check_against_pinocchio(FILES, instance, forward=instance.name in FORWARD)


@pytest.mark.slow
@pytest.mark.usefixtures("without_shape_checks")
@pytest.mark.parametrize("instance", slow_tier(INSTANCES, first_half=True))
def test_every_robot_agrees_with_pinocchio(instance):
    check_against_pinocchio(FILES, instance, forward=instance.name in FORWARD)
