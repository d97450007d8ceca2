"""The public API's docstrings: every public function and class of kronjax and of its public
submodules has one, with at least one runnable example (``>>>``), and every example runs as
written (doctest) with ``jax``, ``jnp``, ``np`` and ``kj`` (``import kronjax as kj``) in scope
and float64 on (as this suite sets it; the examples that need it say so).

Examples show what a user can check by hand: shapes and layouts, identities (``M`` symmetric,
``J qd`` against a finite difference), closed forms of the papers' models; floats are printed
rounded (``print(np.round(x, 6))``) or compared (``np.allclose``), never as full-precision reprs.
"""

import doctest
import importlib
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

# kronjax's public modules: each one's __all__ is its public API (kronjax's: its re-exports)
MODULES = (
    "kronjax",
    "kronjax.batching",
    "kronjax.calculus",
    "kronjax.centroidal",
    "kronjax.chain",
    "kronjax.configuration",
    "kronjax.constrained",
    "kronjax.dynamics",
    "kronjax.identify",
    "kronjax.kinematics",
    "kronjax.mjcf",
    "kronjax.models",
    "kronjax.passive",
    "kronjax.simulate",
    "kronjax.trajopt",
    "kronjax.urdf",
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def public_objects():
    """``{qualified name: object}`` of every public function and class, each object once, named
    by the module that defines it (``kronjax.dynamics.mass_matrix``, exported as ``kj.mass_matrix``)."""
    seen, out = set(), {}
    for name in MODULES:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for attr in names:
            obj = getattr(module, attr)
            # functions wrapped by equinox.filter_jit (or functools.wraps) count as functions
            if not (inspect.isfunction(inspect.unwrap(obj)) or inspect.isclass(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return out


PUBLIC = public_objects()


def test_every_public_function_and_class_has_an_example():
    missing = [name for name, obj in PUBLIC.items() if ">>>" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{len(missing)} public names without a >>> example: {missing}"


def test_every_public_function_documents_its_arguments_and_what_it_returns():
    """An ``Args:`` section naming every parameter (``a, b:`` names several) and a ``Returns:``
    section, Google style, as mkdocstrings renders them."""
    missing = {}
    for name, obj in PUBLIC.items():
        function = inspect.unwrap(obj)
        if not inspect.isfunction(function):
            continue
        doc = inspect.getdoc(function) or ""
        # the Args: block: its entries at one indentation, up to the next section (an unindented line)
        block = doc.split("\nArgs:\n", 1)[1] if "\nArgs:\n" in doc else ""
        entries = []
        for line in block.splitlines():
            if line and not line.startswith(" "):
                break
            if line.startswith("    ") and not line.startswith("     ") and ":" in line:
                entries.append(line.split(":", 1)[0])
        named = {n.strip().lstrip("*") for entry in entries for n in entry.split(",")}
        lacking = [p for p in inspect.signature(function).parameters if p not in named]
        returns = "\nReturns:\n" in doc
        if lacking or not returns:
            missing[name] = lacking + ([] if returns else ["Returns:"])
    assert not missing, f"{len(missing)} public functions lack argument or return documentation: {missing}"


def _examples(obj):
    obj = inspect.unwrap(obj) if not inspect.isclass(obj) else obj
    return [t for t in doctest.DocTestFinder(recurse=False).find(obj, name=obj.__qualname__) if t.examples]


@pytest.mark.parametrize(
    "module",
    [
        pytest.param(module, marks=pytest.mark.slow)
        if module in ("kronjax.identify._excitation", "kronjax.simulate._rollout", "kronjax.simulate._controllers")
        else module
        for module in sorted({name.rpartition(".")[0] for name in PUBLIC})
    ],
)
def test_examples_run_as_written(module):
    """Each public object's examples (the examples of its methods included), by the module that
    defines it: ``pytest tests/test_docstrings.py -k kronjax.dynamics``."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    ran = 0
    for name, obj in PUBLIC.items():
        if name.rpartition(".")[0] != module:
            continue
        tests = _examples(obj)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                    tests += _examples(member.fget if isinstance(member, property) else member)
        for test in tests:
            test.globs = {"jax": jax, "jnp": jnp, "np": np, "kj": kj}
            runner.run(test)
            ran += len(test.examples)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} examples in {module} failed (doctest's report above)"
    if ran == 0:
        pytest.skip(f"no examples in {module} yet")
