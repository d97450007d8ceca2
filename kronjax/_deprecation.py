"""Old names that keep working for one release, each with a ``DeprecationWarning``.

kronjax 0.2 settled one vocabulary (CHANGELOG, "Renamed"): the velocity is ``v`` and its time
derivative ``vd`` everywhere (as on the tangent space of a floating base, where ``v`` is not the
derivative of ``q``), the number of velocity coordinates ``nv``, one ``frame=`` keyword, one
``gravity=`` in the models, randomness as a ``key``. The helpers here map the old spellings onto
the new ones at the boundary of the public functions; nothing inside kronjax uses the old names,
which ``tests/test_deprecations.py`` checks by turning the warning into an error.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

REMOVED_IN = "0.3"


def warn(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warns that ``old`` is deprecated in favour of ``new``.

    Args:
        old: the deprecated spelling, as the user wrote it (``"inverse_dynamics(qd=...)"``).
        new: what to write instead.
        stacklevel: as in ``warnings.warn``; the default points at the caller of the public
            function that calls this.

    Returns:
        None.
    """
    warnings.warn(
        f"{old} is deprecated, use {new} (the old name goes in kronjax {REMOVED_IN})", DeprecationWarning, stacklevel=stacklevel
    )


def renamed_keywords(**new_names: str | tuple[str, Callable[[Any], Any]]) -> Callable[[Callable], Callable]:
    """A decorator: the function also accepts each old keyword, with a warning.

    Positional calls are unaffected (the parameters keep their places); only a keyword spelt the
    old way is moved onto the new one.

    Args:
        **new_names: ``old=new`` pairs of keyword names, or ``old=(new, convert)`` where the old
            keyword took another form of the value (a gravity magnitude for a gravity vector).

    Returns:
        The decorator; the wrapped function keeps the signature of the new names
        (``functools.wraps``), so the documentation shows only those.
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, renamed in new_names.items():
                if old in kwargs:
                    new, convert = (renamed, None) if isinstance(renamed, str) else renamed
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {old}= and {new}= ({old} is the deprecated name of {new})")
                    warn(f"{fn.__name__}({old}=...)", f"{new}=")
                    value = kwargs.pop(old)
                    kwargs[new] = value if convert is None else convert(value)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def renamed_value(value: Any, new_values: dict[str, str], where: str) -> Any:
    """``value``, or its new spelling with a warning if it is a deprecated one.

    Args:
        value: the value the user passed (a string option such as ``method``).
        new_values: ``{old: new}`` spellings.
        where: the keyword, for the message (``"inverse_dynamics(method=...)"``).

    Returns:
        ``new_values[value]`` if ``value`` is a deprecated spelling, else ``value`` unchanged.
    """
    if isinstance(value, str) and value in new_values:
        warn(f"{where} = {value!r}", repr(new_values[value]), stacklevel=4)
        return new_values[value]
    return value


def renamed_attribute(old: str, new: str, owner: str) -> property:
    """A read-only property under an old name that returns attribute ``new`` with a warning.

    Args:
        old: the deprecated name, under which the property is assigned.
        new: the attribute's current name.
        owner: the class's name, for the message.

    Returns:
        The property, to be assigned to the old name in the class body.
    """

    def get(self: Any) -> Any:
        warn(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)

    return property(get, doc=f"Deprecated: use ``{new}``.")


def module_getattr(module: str, moved: dict[str, tuple[Callable[[], Any], str]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for names that left the module's public surface.

    Args:
        module: the module's public name (``"kronjax.simulate"``).
        moved: ``{old_name: (load, advice)}``: ``load()`` returns the object, ``advice`` says what
            to use instead.

    Returns:
        The ``__getattr__`` function, raising ``AttributeError`` for any other name.
    """

    def __getattr__(name: str) -> Any:
        if name in moved:
            load, advice = moved[name]
            warn(f"{module}.{name}", advice)
            return load()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
