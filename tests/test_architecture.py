"""The house rules of kronjax's source (docs/details/architecture.md), read from its syntax trees.

- One underscore rule (equinox's): a private module may be imported anywhere in the package, but a
  name that another module imports carries no underscore.
- Layers: a module imports only from its own unit (top-level module or package) or from a lower
  layer, so the model sits below the algorithms and the algorithms below what is built on them;
  no ``TYPE_CHECKING`` back-references.
- Size: a module of at most ~600 lines, a function of at most ~80 lines of code.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kronjax"

# Lowest first. A unit is a top-level module or package of kronjax.
LAYERS = (
    ("calculus", "_deprecation"),
    ("_rotations", "_lie"),
    ("chain",),
    ("configuration", "_finite", "passive", "batching", "_spatial"),
    ("kinematics",),
    ("dynamics", "centroidal"),
    ("constrained", "identify", "simulate"),
    ("trajopt", "urdf", "mjcf", "models"),
    ("__init__", "__main__"),
)
LAYER = {unit: k for k, units in enumerate(LAYERS) for unit in units}

MODULE_LINES, FUNCTION_LINES = 600, 80


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield path, name, ast.parse(path.read_text(), str(path))


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _source(name: str, path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` reads from."""
    if node.level == 0:
        return node.module
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _unit(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(name: str, path: Path, tree: ast.Module):
    """``(line, source module, imported name)`` of every import from kronjax."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _source(name, path, node)
            if source and source.split(".")[0] == "kronjax":
                for alias in node.names:
                    yield node.lineno, source, alias
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kronjax":
                    yield node.lineno, alias.name, None


def test_no_module_imports_a_private_name_of_another():
    errors = []
    for path, name, tree in _modules():
        modules = {}  # local name -> the kronjax module it is bound to
        for line, source, alias in _imports(name, path, tree):
            if alias is None:
                continue
            if _is_module(f"{source}.{alias.name}"):
                modules[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif alias.name.startswith("_") and source != name:
                errors.append(f"{path.relative_to(PACKAGE)}:{line}: imports {alias.name} from {source}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not _is_module(f"{modules[node.value.id]}.{node.attr}")
            ):
                errors.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: uses {node.value.id}.{node.attr}")
    assert not errors, "a name another module imports carries no underscore:\n" + "\n".join(errors)


def test_no_layer_imports_a_higher_one():
    errors = []
    for path, name, tree in _modules():
        own = _unit(name)
        for line, source, alias in _imports(name, path, tree):
            if alias is not None and _is_module(f"{source}.{alias.name}"):
                source = f"{source}.{alias.name}"  # from .. import _lie
            target = _unit(source)
            if target != own and LAYER[target] >= LAYER[own] and own != "__main__":
                errors.append(
                    f"{path.relative_to(PACKAGE)}:{line}: {own} (layer {LAYER[own]}) imports {source} (layer {LAYER[target]})"
                )
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                errors.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: a TYPE_CHECKING import")
    assert not errors, "\n".join(errors)
    assert {_unit(name) for _, name, _ in _modules()} <= set(LAYER), "a new unit of kronjax: place it in LAYERS"


def _code_lines(source: list[str], node: ast.FunctionDef) -> int:
    """Lines of code of a function: no docstring, blank or comment lines."""
    first = node.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    start = first.end_lineno if docstring else first.lineno - 1
    return sum(1 for line in source[start : node.end_lineno] if line.strip() and not line.strip().startswith("#"))


def _sizes():
    """``{"path" or "path:function": size}`` of what exceeds the limits."""
    out = {}
    for path, _, tree in _modules():
        text = path.read_text()
        where = path.relative_to(PACKAGE).as_posix()
        if text.count("\n") > MODULE_LINES:
            out[where] = text.count("\n")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and (lines := _code_lines(text.split("\n"), node)) > FUNCTION_LINES:
                out[f"{where}:{node.name}"] = lines
    return out


def test_modules_and_functions_hold_one_idea_each():
    sizes = _sizes()
    assert not sizes, f"over {MODULE_LINES} lines (module) or {FUNCTION_LINES} lines of code (function): {sizes}"


@pytest.mark.parametrize("unit", ["dynamics", "kinematics"])
def test_algorithms_live_in_the_package_that_exposes_them(unit):
    """No tree algorithm is one level away from its package (RNEA, ABA, composite bodies, the
    derivatives of the dynamics in ``dynamics/``; the Jacobians and Hessians in ``kinematics/``)."""
    expected = {
        "dynamics": {"_rnea.py", "_aba.py", "_crba.py", "_rnea_derivatives.py", "_aba_derivatives.py", "_rules.py"},
        "kinematics": {"_tree.py", "_jacobians.py", "_poses.py", "_motion.py", "_relative.py"},
    }[unit]
    assert expected <= {path.name for path in (PACKAGE / unit).glob("*.py")}
    top_level = {path.stem for path in PACKAGE.glob("_*.py")} - {"__init__", "__main__"}
    assert top_level <= {"_deprecation", "_finite", "_lie", "_rotations"}, f"private top-level modules: {sorted(top_level)}"
