"""kronjax's benchmark suite: ``python -m bench`` (see ``bench/__main__.py``) and, on a machine with
an NVIDIA GPU, ``python -m bench.gpu``."""
