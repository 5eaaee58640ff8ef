"""vigil: millions of standing queries over data streams (see README.md).

``vigil.Monitor`` is the Python API (``vigil.api``): register queries, push batches, get events.
"""

from .jit import configure as _configure_numba

_configure_numba()  # one numba cache folder for every entry point, before any kernel module loads

from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
    from .api import Monitor

__all__ = ["Monitor"]


def __getattr__(name: str) -> Any:
    # loaded on first use, so that `import vigil` (every command starts with it) stays light
    if name == "Monitor":
        from .api import Monitor

        return Monitor
    raise AttributeError(f"module 'vigil' has no attribute {name!r}")
