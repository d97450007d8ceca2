"""Tests run in float64 (the library never sets this itself); float32 tests cast explicitly."""

import jax

jax.config.update("jax_enable_x64", True)
