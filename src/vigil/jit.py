"""Numba compilation as the user meets it: one cache folder for every entry point, and a first
run that says what it compiles instead of waiting in silence.

vigil's hot loops are ``@numba.njit(cache=True)`` kernels. The first time a kernel runs with a
given argument signature numba compiles it (a few ms to ~1 min for the largest, DT's push) and
stores machine code in ``NUMBA_CACHE_DIR``; later runs load it in milliseconds. Every entry point
(``vigil`` commands, ``make demo``, ``make test``, Spark driver mode, shard tasks, the Python
API) uses one folder, :func:`cache_dir` (``$VIGIL_NUMBA_CACHE``, else ``$NUMBA_CACHE_DIR``, else
``$XDG_CACHE_HOME/vigil-numba`` or ``~/.cache/vigil-numba``), so what one compiled the others reuse.

:class:`CompileWatch` listens to numba's compile events and reports each kernel as it compiles
(family, kernel, how many so far, time spent): the CLI shows it as a status line. :func:`is_warm`
/ :func:`mark_warm` keep a stamp per kernel group (keyed by the group's source files and numba's
version) so that a choice that would compile a large group (``threshold=auto`` moving to DT) can
price the compilation before paying it.

This module imports numba only inside :class:`CompileWatch`; :func:`configure` runs when the
``vigil`` package is imported, before any kernel module.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

_KEY: list[str] = []


def source_key() -> str:
    """A digest of the source of every vigil module that uses numba. numba keys a cached kernel
    by its own file only, while the kernels it calls from other files are compiled into it: after
    an upgrade (or an edit) that changes only a callee's file, the caller's cached machine code
    would still run the old callee, silently. The cache folder is therefore per source version
    (``src-<key>``): a changed kernel file means a fresh folder and a recompilation. ~6 ms."""
    if not _KEY:
        root = Path(__file__).parent
        h = hashlib.sha1()
        for p in sorted(root.rglob("*.py")):
            b = p.read_bytes()
            if b"numba" in b:
                h.update(str(p.relative_to(root)).encode())
                h.update(b)
        _KEY.append("src-" + h.hexdigest()[:16])
    return _KEY[0]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vigil-numba" / source_key()


def configure() -> None:
    """Point numba at vigil's one cache folder, per source version (:func:`source_key`): under
    ``VIGIL_NUMBA_CACHE`` if set, else the default; a ``NUMBA_CACHE_DIR`` set by the user (or by a
    parent vigil process) is kept as it is. Runs before vigil's kernel modules load."""
    chosen = os.environ.get("VIGIL_NUMBA_CACHE")
    if chosen:
        os.environ["NUMBA_CACHE_DIR"] = str(Path(chosen) / source_key())
    else:
        os.environ.setdefault("NUMBA_CACHE_DIR", str(default_cache_dir()))
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba came first (``import numba, vigil``): it read the variable already
        config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


def cache_dir() -> Path:
    return Path(os.environ.get("NUMBA_CACHE_DIR") or default_cache_dir())


# ---------------------------------------------------------------------------- warm stamps
def _stamp(group: str, modules: Iterable[str]) -> Path:
    import numba

    h = hashlib.sha1(numba.__version__.encode())
    for m in sorted(modules):
        p = Path(m)
        st = p.stat()
        h.update(f"{p.resolve()}:{st.st_mtime_ns}:{st.st_size}".encode())
    return cache_dir() / "vigil-warm" / f"{group}-{h.hexdigest()[:16]}"


def is_warm(group: str, modules: Iterable[str]) -> bool:
    """True when kernel group ``group`` (built from the source files ``modules``) was compiled
    into the cache by an earlier run (:func:`mark_warm`) and its sources have not changed."""
    try:
        return _stamp(group, modules).exists()
    except OSError:
        return False


def mark_warm(group: str, modules: Iterable[str]) -> None:
    try:
        p = _stamp(group, modules)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch()
    except OSError:  # a read-only cache folder only costs the stamp
        pass


# ---------------------------------------------------------------------------- compile events
def kernel_name(dispatcher) -> tuple[str, str]:
    """(group, kernel) of a numba dispatcher: ``("threshold", "push_dt")`` for
    ``vigil.threshold._dt_push.push_dt``; numba's own helpers are group ``numba``."""
    f = getattr(dispatcher, "py_func", None)
    mod = getattr(f, "__module__", "") or ""
    name = getattr(f, "__qualname__", "?").split(".<locals>")[0]
    parts = mod.split(".")
    group = parts[1] if parts[0] == "vigil" and len(parts) > 2 else parts[0] or "?"
    return group, name


class CompileWatch:
    """Reports numba compilations while it is installed (``with CompileWatch(show): ...``).

    ``show(watch)`` is called when a top-level kernel starts and when it ends, from the thread that
    compiles; ``watch.current`` is ``(group, kernel)`` or None, ``watch.count`` the kernels
    compiled so far, ``watch.seconds`` the time spent compiling, ``watch.started`` the
    ``perf_counter`` of the current kernel's start. Nested compilations (a kernel's callees)
    count in their caller's time.
    """

    def __init__(self, show: Callable[[CompileWatch], None] | None = None) -> None:
        self.show = show
        self.current: tuple[str, str] | None = None
        self.count = 0
        self.seconds = 0.0
        self.started = 0.0
        self.groups: dict[str, int] = {}
        self._depth = 0
        self._lock = threading.Lock()
        self._listener = None

    def __enter__(self) -> CompileWatch:
        from numba.core import event

        watch = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                watch._on(ev, True)

            def on_end(self, ev):
                watch._on(ev, False)

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)

    def _on(self, ev, start: bool) -> None:
        with self._lock:
            if start:
                self._depth += 1
                if self._depth > 1:
                    return
                self.current = kernel_name(ev.data.get("dispatcher"))
                self.started = time.perf_counter()
            else:
                self._depth -= 1
                if self._depth > 0:
                    return
                self.count += 1
                self.seconds += time.perf_counter() - self.started
                g = self.current[0] if self.current else "?"
                self.groups[g] = self.groups.get(g, 0) + 1
                self.current = None
        if self.show is not None:
            self.show(self)

    def line(self) -> str:
        """One status line: what compiles now, how many so far, time spent."""
        if self.current is None:
            return f"numba kernels (first run only): {self.count} compiled in {self.seconds:.0f} s"
        g, k = self.current
        now = time.perf_counter() - self.started
        return (f"compiling {g}.{k} {now:.0f} s (numba, first run only: {self.count} kernels "
                f"done, {self.seconds + now:.0f} s)")


class compile_status:  # noqa: N801  (a context manager used like a function)
    """``with compile_status(console): ...`` shows a self-refreshing status line on ``console``
    while numba compiles (the current kernel and its elapsed seconds move on their own; on a
    console that is not a terminal, one line per kernel group instead), and one closing line with
    the count and time if anything compiled."""

    def __init__(self, console) -> None:
        self.console = console
        self.watch = CompileWatch(self._show)
        self._status = None
        self._groups: set[str] = set()

    def __rich__(self) -> str:
        return self.watch.line()

    def _show(self, w: CompileWatch) -> None:
        if not self.console.is_terminal:  # a log or a pipe: one plain line per kernel group
            if w.current is not None and w.current[0] not in self._groups:
                self._groups.add(w.current[0])
                self.console.print(f"compiling numba kernels: {w.current[0]} (first run only; "
                                   f"{w.count} kernels done, {w.seconds:.0f} s)")
            return
        if w.current is not None and self._status is None:
            self._status = self.console.status(self)
            try:
                self._status.start()
            except Exception:  # another live display owns the console: fall back to plain lines
                self._status = False
                self.console.print(w.line())

    def __enter__(self) -> compile_status:
        self.watch.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.watch.__exit__(*exc)
        if self._status:
            self._status.stop()
        if self.watch.count:
            self.console.print(f"compiled {self.watch.count} numba kernels in {self.watch.seconds:.0f} s "
                               f"(first run only; cached in {cache_dir()})")


def compile_progress(*columns, **kwargs):
    """A ``rich.progress.Progress`` that shows, under its bars, the kernel numba is compiling
    (elapsed seconds moving) while it compiles: the replay progress bar of a first run says why it
    waits. Use it as a context manager like ``Progress``; it watches compilations while open."""
    from rich.progress import Progress
    from rich.text import Text

    class _Progress(Progress):
        def __init__(self) -> None:
            self.watch = CompileWatch()
            super().__init__(*columns, **kwargs)

        def get_renderables(self):
            yield self.make_tasks_table(self.tasks)
            if self.watch.current is not None:
                yield Text(self.watch.line(), style="yellow")

        def __enter__(self):
            self.watch.__enter__()
            return super().__enter__()

        def __exit__(self, *exc):
            super().__exit__(*exc)
            self.watch.__exit__(*exc)
            w = self.watch
            if w.count and not self.disable:
                self.console.print(f"compiled {w.count} numba kernels in {w.seconds:.0f} s "
                                   f"(first run only; cached in {cache_dir()})")

    return _Progress()
