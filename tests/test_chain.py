"""Model construction: builders, names, pytree parameters, and clear errors for bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj

ROWS = [("R", 0.3, 0.0, 0.1, np.pi / 2), ("P", 0.0, 0.2, 0.0, 0.0), ("R", 0.0, 0.0, 0.4, 0.0)]


def assert_frames_are_products(model, q, hom):
    """Frame i of ``model`` is the product of the textbook D-H matrices ``hom`` of rows 0..i."""
    r, p = kj.forward_kinematics(model, q)
    t = np.eye(4)
    for i, (kind, d, theta, a, alpha) in enumerate(ROWS):
        t = t @ hom(theta + (q[i] if kind == "R" else 0), d + (q[i] if kind == "P" else 0), a, alpha)
        np.testing.assert_allclose(r[i], t[:3, :3], atol=1e-14)
        np.testing.assert_allclose(p[i], t[:3, 3], atol=1e-14)


def test_dh_standard_matches_textbook_product():
    """A_i = Rz(theta) Tz(d) Tx(a) Rx(alpha), with q added to theta (R) or d (P)."""

    def hom(theta, d, a, alpha):
        ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
        return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st], [0, sa, ca, d], [0, 0, 0, 1]])

    assert_frames_are_products(kj.from_dh(ROWS), np.array([0.4, -0.25, 1.1]), hom)


def test_dh_modified_matches_textbook_product():
    """A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i) (Craig)."""

    def hom(theta, d, a, alpha):
        ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
        return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -sa * d], [st * sa, ct * sa, ca, ca * d], [0, 0, 0, 1]])

    assert_frames_are_products(kj.from_dh(ROWS, convention="modified"), np.array([-0.7, 0.15, 0.3]), hom)


def test_fixed_rows_take_no_coordinate():
    model = kj.from_dh([("R", 0.1, 0, 0.2, 0), ("F", 0.05, 0.3, 0.1, 0.2), ("R", 0, 0, 0.3, 0)])
    assert model.nv == 2 and model.n_bodies == 3
    assert model.kinematics.q_index == (0, -1, 1)


def test_body_names_and_indices():
    model = kj.models.stacker()
    q = jnp.array([0.1, 0.2, 0.3])
    assert model.body_names == ("rail", "slew", "boom")
    np.testing.assert_array_equal(kj.translational_jacobian(model, q, "boom"), kj.translational_jacobian(model, q, 2))


def test_model_is_a_pytree_with_parameter_leaves():
    model = kj.models.stacker()
    q = jnp.array([0.1, 0.2, 0.3])

    def tip_z(m):
        return kj.forward_kinematics(m, q).origins[2, 2]

    grads = eqx.filter_grad(tip_z)(model)
    # the tip height depends on the boom's post translation (a3), not on masses
    assert float(jnp.abs(grads.kinematics.post_translation[2, 0])) > 0
    assert float(jnp.abs(grads.inertials.mass).sum()) == 0.0
    flat, treedef = jax.tree.flatten(model)
    assert all(isinstance(x, jax.Array) for x in flat)
    assert jax.tree.unflatten(treedef, flat).body_names == model.body_names


# ----------------------------------------------------------------------------------------------
# Clear errors: each names the offending item
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q, match",
    [(jnp.zeros(2), r"q must have shape \(3,\).*got \(2,\)"), (jnp.zeros((3, 1)), r"shape \(3,\)")],
)
@pytest.mark.usefixtures("without_shape_checks")
def test_wrong_q_length(q, match):
    with pytest.raises(ValueError, match=match):
        kj.translational_jacobian(kj.models.stacker(), q, 0)


def test_wrong_v_length_names_v():
    with pytest.raises(ValueError, match="v must have shape"):
        kj.linear_velocity(kj.models.stacker(), jnp.zeros(3), jnp.zeros(4), 0)


def test_unknown_joint_type_in_dh_row():
    with pytest.raises(ValueError, match=r"D-H row 1: unknown joint type 'X'"):
        kj.from_dh([("R", 0, 0, 1, 0), ("X", 0, 0, 1, 0)])


def test_unknown_joint_type_in_joint():
    with pytest.raises(ValueError, match=r"body 0: unknown joint type 'S'"):
        kj.from_joints([kj.Joint(kind="S")])


def test_unknown_convention():
    with pytest.raises(ValueError, match="unknown D-H convention 'craig'"):
        kj.from_dh(ROWS, convention="craig")


@pytest.mark.parametrize(
    "rows, match",
    [
        ([("R", 0, 0, 1)], r"D-H row 0 must have 5 entries"),
        ([("R", 0, 0, 1, 0), ("R", "x", 0, 1, 0)], r"D-H row 1 d must be"),
        ([("R", 0, float("nan"), 1, 0)], r"D-H row 0 theta must be finite"),
        ([("R", 0, 0, [1, 2], 0)], r"D-H row 0 a must have shape"),
        ([], "non-empty"),
        ([3.0], r"D-H row 0 must be"),
    ],
)
def test_malformed_dh_rows(rows, match):
    with pytest.raises((ValueError, TypeError), match=match):
        kj.from_dh(rows)


@pytest.mark.parametrize(
    "body, error, match",
    [
        (3, IndexError, r"body index 3 out of range: the model has 3 bodies"),
        (-1, IndexError, r"body index -1 out of range"),
        ("mast", KeyError, r"no body named 'mast'"),
        (1.0, TypeError, r"body must be an index or a name"),
    ],
)
@pytest.mark.usefixtures("without_shape_checks")
def test_missing_body(body, error, match):
    with pytest.raises(error, match=match):
        kj.rotational_jacobian(kj.models.stacker(), jnp.zeros(3), body)


def test_unknown_frame_and_point():
    model = kj.models.stacker()
    with pytest.raises(ValueError, match="unknown frame 'world'"):
        kj.rotational_jacobian(model, jnp.zeros(3), 0, frame="world")
    with pytest.raises(ValueError, match="unknown frame 'body\\*'"):
        kj.rotational_hessian(model, jnp.zeros(3), 0, frame="body*")
    with pytest.raises(ValueError, match="point must be None, 'com' or a 3-vector"):
        kj.translational_jacobian(model, jnp.zeros(3), 0, point="tip")
    with pytest.raises(ValueError, match="point must be a 3-vector"):
        kj.translational_jacobian(model, jnp.zeros(3), 0, point=[1.0, 2.0])
    with pytest.raises(ValueError, match="point='com' needs a model with inertials"):
        kj.translational_jacobian(kj.from_dh(ROWS), jnp.zeros(3), 0, point="com")


def test_non_orthonormal_poses_function():
    def poses(q):
        r = jnp.stack([jnp.eye(3), jnp.diag(jnp.array([1.0, 1.0 + 0.1 * jnp.cos(q[0]), 1.0]))])
        return r, jnp.zeros((2, 3))

    with pytest.raises(ValueError, match=r"rotation of body 1 .* not a proper rotation"):
        kj.from_function(poses, 1)


def test_reflection_from_poses_function_is_rejected():
    with pytest.raises(ValueError, match="rotation of body 0"):
        kj.from_function(lambda q: (jnp.diag(jnp.array([1.0, 1.0, -1.0]))[None], q[None] * jnp.ones(3)), 1)


def test_poses_function_bad_shapes():
    with pytest.raises(ValueError, match=r"origins must have shape \(1, 3\)"):
        kj.from_function(lambda q: (jnp.eye(3)[None], jnp.zeros((2, 3))), 1)
    with pytest.raises(ValueError, match=r"expected \(nb, 4, 4\)"):
        kj.from_function(lambda q: jnp.eye(4), 1)
    with pytest.raises(ValueError, match="positive integer"):
        kj.from_function(lambda q: jnp.eye(4)[None], 0)


def test_poses_function_homogeneous_transforms():
    def poses(q):
        c, s = jnp.cos(q[0]), jnp.sin(q[0])
        return jnp.array([[[c, -s, 0, q[1]], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]])

    model = kj.from_function(poses, 2)
    q = jnp.array([0.3, 0.2])
    np.testing.assert_allclose(kj.rotational_jacobian(model, q, 0), [[0, 0], [0, 0], [1, 0]], atol=1e-14)
    np.testing.assert_allclose(kj.translational_jacobian(model, q, 0), [[0, 1], [0, 0], [0, 0]], atol=1e-14)


@pytest.mark.parametrize(
    "inertial, match",
    [
        (kj.Inertial(mass=0.0, inertia=[0.1, 0.1, 0.1]), r"body 0 \(link1\): mass must be positive"),
        (kj.Inertial(mass=-1.0), r"mass must be positive"),
        (kj.Inertial(mass=1.0, inertia=[[1, 2, 0], [2, 1, 0], [0, 0, 1]]), r"not positive semi-definite"),
        (kj.Inertial(mass=1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), r"not symmetric"),
        (kj.Inertial(mass=1.0, inertia=[1.0, -0.1, 1.0]), r"not positive semi-definite"),
        (kj.Inertial(mass=1.0, com=[0, 0]), r"centre of mass must have shape \(3,\)"),
    ],
)
def test_bad_inertials(inertial, match):
    with pytest.raises(ValueError, match=match):
        kj.from_dh(ROWS[:1], inertials=[inertial])


def test_wrong_number_of_inertials():
    with pytest.raises(ValueError, match="got 1 inertials for 3 bodies"):
        kj.from_dh(ROWS, inertials=[kj.Inertial(mass=1.0)])


def test_bad_tree_topology():
    with pytest.raises(ValueError, match="body 1: parent 1 must be -1"):
        kj.from_joints([kj.Joint("R"), kj.Joint("R", parent=1)])


def test_bad_joint_geometry():
    with pytest.raises(ValueError, match=r"joint 0 \(joint1\) axis must be non-zero"):
        kj.from_joints([kj.Joint("R", axis=(0, 0, 0))])
    with pytest.raises(ValueError, match=r"joint 0 \(joint1\) rotation is not a proper rotation"):
        kj.from_joints([kj.Joint("R", rotation=np.diag([1.0, 2.0, 1.0]))])


def test_duplicate_names():
    with pytest.raises(ValueError, match="duplicate body name 'a'"):
        kj.from_dh(ROWS[:2], body_names=["a", "a"])
