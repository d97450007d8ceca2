"""MkDocs hooks of kronjax's site (mkdocs.yml ``hooks:``); nothing here runs a notebook or a benchmark.

* ``on_files``: the site shows files that live elsewhere in the repository, without copies in
  ``docs/``: the notebooks (``notebooks/*.ipynb``, rendered by mkdocs-jupyter with their committed
  outputs) and the benchmark scaling plots (``bench/results/*-scaling.png``) appear at the same paths in the site.
* ``on_page_markdown``: on the API reference's index, ``<!-- kronjax-namespace -->`` becomes the
  table of the names of the ``kronjax`` namespace (``kj.mass_matrix`` ...) and of its submodules,
  each linked (by autorefs, wherever the API pages render it) to its documentation, read from the
  source by Griffe (mkdocstrings' parser), so that the table follows ``kronjax/__init__.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import griffe
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = ("notebooks/*.ipynb", "bench/results/*-scaling.png")  # the benchmark page shows the scaling plots
NAMESPACE_MARKER = "<!-- kronjax-namespace -->"


@event_priority(100)  # before mkdocs-jupyter's on_files, which picks up the notebooks
def on_files(files: Files, config, **kwargs) -> Files:
    for pattern in EXTERNAL:
        for path in sorted(ROOT.glob(pattern)):
            # a File with the repository as its source directory (mkdocs-jupyter's wrapper cannot
            # read a File.generated one): it keeps its path, relative to the repository
            uri = path.relative_to(ROOT).as_posix()
            files.append(File(uri, src_dir=str(ROOT), dest_dir=config.site_dir, use_directory_urls=config.use_directory_urls))
    return files


def _summary(obj: griffe.Object) -> str:
    text = obj.docstring.value if obj.docstring else ""
    first = text.strip().split("\n\n", 1)[0]
    first = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?(\w+)(?:\(\))?`", r"`\1`", first)  # Sphinx roles: the name as code
    return " ".join(first.split()).replace("|", "\\|")


def namespace_table() -> str:
    """Markdown tables of ``kronjax``'s names: the functions and classes it re-exports, and its
    public submodules."""
    package = griffe.load("kronjax", search_paths=[str(ROOT)], resolve_aliases=True)
    objects, modules = [], []
    for name, member in package.members.items():
        if name.startswith("_"):
            continue
        if member.is_module:
            modules.append(f"| [`kj.{name}`][kronjax.{name}] | {_summary(member)} |")
        elif member.is_function or member.is_class:
            path = member.target_path if member.is_alias else member.path
            objects.append(f"| [`kj.{name}`][{path}] | `{path}` | {_summary(member)} |")
    return "\n".join(
        [
            "| name | defined in | summary |",
            "| --- | --- | --- |",
            *objects,
            "",
            "Submodules (`kj.<module>.<name>`; each module's page documents its whole public API):",
            "",
            "| module | summary |",
            "| --- | --- |",
            *sorted(modules),
        ]
    )


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if NAMESPACE_MARKER in markdown:
        markdown = markdown.replace(NAMESPACE_MARKER, namespace_table())
    return markdown
