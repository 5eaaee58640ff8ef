"""vigil: millions of standing queries over data streams (see README.md)."""

from .jit import configure as _configure_numba

_configure_numba()  # one numba cache folder for every entry point, before any kernel module loads
