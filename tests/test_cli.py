"""The README's demo command runs and its finite-difference check passes."""

import contextlib
import io
from pathlib import Path

import pytest

from kronjax.__main__ import main


@pytest.fixture(scope="module")
def demo():
    """``kronjax demo`` run once (a minute of compilation) for the tests of its two sections:
    its exit status and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["demo"])
    return status, out.getvalue()


@pytest.mark.slow
def test_demo_prints_the_stacker_analysis(demo):
    status, out = demo
    assert status == 0
    for key in ("J_T3", "H_T3", "J_R3", "H_R3", "central difference", "max difference"):
        assert key in out


@pytest.mark.slow
def test_demo_optimises_a_trajectory_with_a_progress_display(demo):
    """The trajectory-optimisation section: progress lines (iterations, cost, violation), a
    feasible optimum cheaper than Truc's (73) over the same motion, and an open-loop simulation of
    the optimised torques that tracks the trajectory."""
    status, out = demo
    assert status == 0
    out = out.split("Trajectory optimisation:")[1]
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["iter", "cost", "violation"])
    progress = []
    for line in lines[header + 1 :]:
        if not line.split() or not line.split()[0].isdigit():
            break
        progress.append([float(x.rstrip("s")) for x in line.split()])
    assert len(progress) >= 2 and progress[-1][0] > progress[0][0]
    assert progress[-1][2] <= 1e-6  # feasible at the end
    optimised = float(out.split("optimised: cost ")[1].split()[0])
    paper = float(out.split("on [0, 0.5 s]: cost ")[1].split()[0])
    assert optimised < paper
    assert float(out.split("max tracking error ")[1].split()[0]) < 1e-6


def test_unknown_command_shows_usage(capsys):
    assert main(["fly"]) == 2
    assert "usage: kronjax" in capsys.readouterr().err


def test_info_prints_joints_limits_masses_and_mass_matrix_of_a_urdf(tmp_path, capsys):
    path = tmp_path / "arm.urdf"
    path.write_text(
        '<robot name="arm"><link name="base"/>'
        '<link name="upper"><inertial><mass value="2.5"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.2"/></inertial></link>'
        '<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>'
        '<limit lower="-1.5" upper="2" effort="40" velocity="3"/></joint></robot>'
    )
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 joint coordinates, 1 bodies" in out
    row = next(line for line in out.splitlines() if "shoulder" in line).split()
    assert row[1:5] == ["shoulder", "revolute", "(base)", "upper"]
    assert [float(x) for x in row[5:]] == [-1.5, 2.0, 3.0, 40.0, 2.5]
    assert "M(q = 0) =" in out and "[[0.2]]" in out  # Izz about the joint axis


def test_info_of_a_floating_base_robot(tmp_path, capsys):
    """A single body on a free-flyer: M at the neutral configuration is diag(m, m, m, I)."""
    path = tmp_path / "box.urdf"
    path.write_text(
        '<robot name="box"><link name="box"><inertial><mass value="2.5"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link></robot>'
    )
    assert main(["info", str(path), "--floating-base"]) == 0
    out = capsys.readouterr().out
    assert "nq = 7, nv = 6, 1 bodies" in out
    assert next(line for line in out.splitlines() if "root_joint" in line).split()[1:5] == ["root_joint", "free", "(base)", "box"]
    assert "M(q = neutral) =" in out and "[[2.5 0.  0.  0.  0.  0. ]" in out and "[0.  0.  0.  0.  0.  0.3]]" in out


def test_info_of_a_builtin_model_and_of_a_missing_file(capsys):
    assert main(["info", "stacker"]) == 0
    assert "travel" in capsys.readouterr().out
    assert main(["info", "no/such/robot.urdf"]) == 1
    assert "no URDF file at" in capsys.readouterr().err


def test_info_of_an_mjcf_file(capsys):
    pytest.importorskip("mujoco")
    path = Path(__file__).parent / "data" / "mjcf_arm.xml"
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "5 joint coordinates" in out
    row = next(line for line in out.splitlines() if " j1 " in line).split()
    assert row[1:3] == ["j1", "revolute"]
    assert main(["info", "no/such/robot.xml"]) == 1
    assert "neither an MJCF file" in capsys.readouterr().err


def test_info_of_a_closed_chain_names_its_constraints_and_degrees_of_freedom(capsys):
    assert main(["info", "four_bar"]) == 0
    out = capsys.readouterr().out
    assert "planar_point loop closure coupler-rocker (2 equations)" in out
    assert "closed chain: 1 degree of freedom" in out
