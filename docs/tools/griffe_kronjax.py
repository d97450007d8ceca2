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
* Citations: the short tags of the works in ``docs/references.md`` ("Tuan et al. 2019", "Truc 52",
  "Featherstone's ABA", "N&W 19.4"...) become links to the bibliography's entries, the first
  occurrence of each work in a docstring; code (inline, ``>>>`` lines, literal blocks) is left as
  it is. ``CITATIONS`` maps each entry's anchor (``{#tuan2019}`` in references.md) to the pattern
  of its tags; an anchor that references.md lacks fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")
_EXAMPLE_HEADER = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_LITERAL_INTRO = re.compile(r"::[ \t]*\n([ \t]*\n)")
# anchor in docs/references.md -> the tags that cite it in docstrings (a space matches any whitespace,
# a tag may wrap); the longer tags of one author first where two entries share it
CITATIONS = {
    "tuan2019": r"\bTuan(?: et al\.)?(?: \(?2019\)?)?",
    "truc2019": r"\bTruc(?: et al\.)?(?: \(?2019\)?)?",
    "parsa2007": r"\bParsa\b",
    "huang2001": r"\bHuang(?: et al\.)?(?=\W)",
    "khang2010": r"\bKhang\b",
    "featherstone2008": r"\bFeatherstone\b(?: \(?2008\)?)?",
    "carpentier2018": r"\bCarpentier(?: and |-)Mansard\b(?: \(?(?:RSS )?2018\)?)?",
    "nocedal2006": r"\bNocedal and Wright\b|\bN&W\b",
    "wachter2006": r"\bWächter and Biegler\b",
    "griewank1982": r"\bGriewank and Toint(?: 1982)?",
    "schraudolph2002": r"\bSchraudolph\b",
    "deboor1978": r"\bde Boor\b",
    "flash1985": r"\bFlash and Hogan\b",
    "atkeson1986": r"\bAtkeson(?:, An and Hollerbach| et al\.)?(?: 1986)?",
    "khalil2002": r"\bKhalil and Dombre(?: 2002)?",
    "gautier1990": r"\bGautier and Khalil(?: 1990|(?='s))",
    "gautier1992": r"\bGautier and Khalil 1992",
    "gautier2001": r"\bGautier and Poignet(?: 2001)?",
    "gautier1991": r"\bGautier 1991",
    "gautier1997": r"\bGautier 1997",
    "schafer2011": r"\bSchafer(?: 2011)?",
    "wahba1990": r"\bWahba(?: 1990)?",
    "swevers1997": r"\bSwevers et al\.(?: 1997)?",
    "wensing2017": r"\bWensing(?:, Kim and Slotine| et al\.) 2017",
    "lee2020": r"\bLee, Wensing and Park(?: 2020)?",
    "rucker2022": r"\bRucker and Wensing(?: 2022)?",
    "orin2013": r"\bOrin, Goswami and Lee\b",
    "armstrong1986": r"\bArmstrong, Khatib and Burdick(?: \(1986\))?|\bArmstrong et al\.",
    "gaz2019": r"\bGaz et al\.(?: \(?2019\)?)?",
    "wang1991": r"\bWang and Chen\b",
    "hairer2006": r"\bHairer, Lubich, Wanner\b",
    "baumgarte1972": r"\bBaumgarte\b",
    "craig2005": r"\bCraig\b",
    "rtb": r"\bCorke\b(?!, B\. Armstrong)",
}
_CITATION = re.compile("|".join(f"(?P<{key}>{pattern})".replace(" ", r"\s+") for key, pattern in CITATIONS.items()))
REFERENCES = Path(__file__).resolve().parents[1] / "references.md"
_CODE_SPAN = re.compile(r"(``.*?``|`[^`\n]*`)", re.DOTALL)
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


def _prose_blocks(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into ``(is_prose, chunk)``: ``>>>`` and ``...`` lines and the indented block
    after a line that ends with ``::`` are code."""
    out, lines, literal_indent = [], text.split("\n"), None
    for i, line in enumerate(lines):
        end = "\n" if i < len(lines) - 1 else ""
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None and line.strip() and indent <= literal_indent:
            literal_indent = None
        code = literal_indent is not None or line.lstrip().startswith((">>>", "... ")) or line.strip() == "..."
        if line.rstrip().endswith("::") and literal_indent is None:
            literal_indent = indent
        if out and out[-1][0] == (not code):
            out[-1] = (not code, out[-1][1] + line + end)
        else:
            out.append((not code, line + end))
    return out


def link_citations(text: str) -> str:
    """``text`` with the first tag of each work of ``CITATIONS`` (outside code) an autoref to its
    entry in the bibliography."""
    seen: set[str] = set()

    def link(match: re.Match) -> str:
        key = match.lastgroup
        if key in seen:
            return match.group(0)
        seen.add(key)
        return f'<autoref identifier="{key}">{match.group(0)}</autoref>'

    out = []
    for prose, chunk in _prose_blocks(text):
        if not prose:
            out.append(chunk)
            continue
        parts = _CODE_SPAN.split(chunk)  # odd indices: code spans
        out.append("".join(part if i % 2 else _CITATION.sub(link, part) for i, part in enumerate(parts)))
    return "".join(out)


class KronjaxDocstrings(griffe.Extension):
    """See the module docstring."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "kronjax":
            return
        text = REFERENCES.read_text(encoding="utf-8")
        missing = [key for key in CITATIONS if "{#" + key + "}" not in text]
        if missing:  # a warning: mkdocs build --strict fails
            griffe.logger.warning(f"CITATIONS names anchors that {REFERENCES.name} lacks: {', '.join(missing)}")
        for obj in _walk(pkg):
            docstring = obj.docstring
            if docstring is None:
                continue
            text = link_citations(docstring.value)
            text = _EXAMPLE_HEADER.sub(r"\1Examples:", text)
            text = _LITERAL_INTRO.sub(r":\n\1", text)  # after: "Example::" stays an "Example" callout
            docstring.value = _ROLE.sub(lambda match, obj=obj: _role_to_markdown(obj, match), text)
            _check_parameters(obj)


def _walk(obj: griffe.Object):
    """Every object defined in ``obj`` (not aliases: each object once, where it is defined)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)
