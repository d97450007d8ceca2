"""A Griffe extension (mkdocstrings' parser) for kronjax's docstring conventions.

kronjax's docstrings are Google style read by people in a terminal (``help()``) and by doctest
(``tests/test_docstrings.py``), with a few habits that Griffe reads differently; this extension
adapts the text Griffe parses, never the source:

* ``Example:`` sections (Napoleon's singular spelling) are read as ``Examples:``, so that their
  ``>>>`` lines render as code; Griffe reads ``Example:`` as a callout of Markdown text.
* A paragraph that ends with reST's ``::`` before an indented block ends with ``:``; the block is
  a Markdown code block already (``Example::`` with code that is not ``>>>`` becomes an
  "Example" callout holding that code).
* Sphinx roles (``:func:`~kronjax.chain.Model```, ``:class:`Tree```, ``:meth:``, ``:mod:``,
  ``:attr:``, ``:data:``) become code that links to the object where Griffe can resolve the name
  (relative names from the enclosing class, module and packages); the link is
  optional, so a name that is not rendered (a private module) stays plain code.
* Parameter checks: ``Args:`` entries may name several parameters at once (``kp, kd: gains``),
  and equinox Modules without an ``__init__`` document their fields under ``Args:`` (equinox
  generates the dataclass ``__init__``, which static analysis does not see). mkdocs.yml turns off
  Griffe's own unknown-parameter check (``warn_unknown_params: false``), which reads neither, and
  this extension runs the same check with both conventions: a name that is neither a parameter
  nor a field is a warning, which fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")
_EXAMPLE_HEADER = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_LITERAL_INTRO = re.compile(r"::[ \t]*\n([ \t]*\n)")
_PARAMETER_SECTIONS = (griffe.DocstringSectionKind.parameters, griffe.DocstringSectionKind.other_parameters)


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The path of the object ``target`` names, seen from ``obj``'s docstring, or None."""
    collection = obj.modules_collection
    # the object, its class, its module and the packages above it (kronjax.trajopt for its _costs)
    scopes = [obj.path, obj.parent.path if obj.parent else None]
    module = obj.module
    while module is not None:
        scopes.append(module.path)
        module = module.parent
    for candidate in [target] + [f"{scope}.{target}" for scope in scopes if scope]:
        try:
            found = collection[candidate]
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        if found is not None:  # where it is defined: every rendered object is registered there
            try:
                return found.canonical_path
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return candidate
    return None


def _role_to_markdown(obj: griffe.Object, match: re.Match) -> str:
    short, target = match.group(1) == "~", match.group(2)
    title = f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"
    path = _resolve(obj, target)
    if path is None:
        return title
    return f'<autoref identifier="{path}" optional>{title}</autoref>'


def _accepted_names(obj: griffe.Object) -> set[str] | None:
    """Names an ``Args:`` entry of ``obj`` may use: a function's parameters, a class's
    ``__init__`` parameters or, without an ``__init__`` (equinox Modules, dataclasses), its
    annotated fields, inherited ones included. None where Griffe cannot tell."""
    try:
        if obj.is_function:
            parameters = obj.parameters
        elif obj.is_class:
            members = obj.all_members
            if "__init__" not in members:
                return {name for name, member in members.items() if member.is_attribute and member.annotation is not None}
            parameters = members["__init__"].parameters
        else:
            return None
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return {parameter.name for parameter in parameters}


def _check_parameters(obj: griffe.Object) -> None:
    accepted = _accepted_names(obj)
    if accepted is None or obj.docstring is None:
        return
    sections = obj.docstring.parse("google", warnings=False)
    lines = obj.docstring.value.split("\n")
    for section in sections:
        if section.kind not in _PARAMETER_SECTIONS:
            continue
        for parameter in section.value:
            for name in (part.strip().lstrip("*") for part in parameter.name.split(",")):
                if name and name not in accepted:
                    item = re.compile(rf"\s+(?:[\w*]+,\s*)*\**{re.escape(name)}\s*[(:,]")
                    offset = next((i for i, line in enumerate(lines) if item.match(line)), 0)
                    griffe.docstring_warning(
                        obj.docstring, offset, f"Parameter '{name}' is neither a parameter nor a field of {obj.path}"
                    )


class KronjaxDocstrings(griffe.Extension):
    """See the module docstring."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "kronjax":
            return
        for obj in _walk(pkg):
            docstring = obj.docstring
            if docstring is None:
                continue
            text = _EXAMPLE_HEADER.sub(r"\1Examples:", docstring.value)
            text = _LITERAL_INTRO.sub(r":\n\1", text)  # after: "Example::" stays an "Example" callout
            docstring.value = _ROLE.sub(lambda match, obj=obj: _role_to_markdown(obj, match), text)
            _check_parameters(obj)


def _walk(obj: griffe.Object):
    """Every object defined in ``obj`` (not aliases: each object once, where it is defined)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)
