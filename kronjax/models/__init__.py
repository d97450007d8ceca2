"""Built-in models: the papers' examples."""

from .stacker import stacker as stacker

__all__ = ["stacker"]
