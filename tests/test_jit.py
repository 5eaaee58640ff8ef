"""vigil.jit: one numba cache folder, compile events seen, stamps."""

from __future__ import annotations

import io
import os

import numba
from rich.console import Console

from vigil import jit


def test_every_entry_point_shares_one_cache_folder():
    # vigil/__init__ ran configure() before any kernel module: numba's folder is vigil's
    assert os.environ["NUMBA_CACHE_DIR"] == str(jit.cache_dir())
    assert numba.config.CACHE_DIR == os.environ["NUMBA_CACHE_DIR"]  # numba was imported first here


def test_configure_prefers_vigil_numba_cache(monkeypatch):
    from numba.core import config

    monkeypatch.setenv("NUMBA_CACHE_DIR", os.environ["NUMBA_CACHE_DIR"])  # restored after the test
    monkeypatch.setattr(config, "CACHE_DIR", config.CACHE_DIR)
    monkeypatch.setenv("VIGIL_NUMBA_CACHE", "/tmp/somewhere")
    jit.configure()
    assert os.environ["NUMBA_CACHE_DIR"] == f"/tmp/somewhere/{jit.source_key()}" == config.CACHE_DIR


def test_the_cache_folder_is_per_kernel_source_version():
    """numba keys a cached kernel by its own file, not by the files of the kernels it calls: a
    changed callee must not run under a caller's stale machine code, so the folder changes with
    the source of any numba module (and only with those)."""
    key = jit.source_key()
    assert key.startswith("src-") and jit.default_cache_dir().name == key
    jit._KEY.clear()
    try:
        assert jit.source_key() == key  # deterministic
    finally:
        jit._KEY[:] = [key]


def test_compile_watch_reports_each_kernel_and_status_prints_per_group():
    @numba.njit  # not cached: compiles in this test
    def add_one(x):
        return x + 1

    seen = []
    buf = io.StringIO()
    with jit.compile_status(Console(file=buf, width=200)) as st:
        with jit.CompileWatch(lambda w: seen.append((w.current, w.count))):
            assert add_one(1) == 2
    assert seen[0][0][1] == "test_compile_watch_reports_each_kernel_and_status_prints_per_group" \
        or seen[0][0][1].endswith("add_one")
    assert seen[-1] == (None, 1)
    assert st.watch.count == 1
    out = buf.getvalue()
    assert "compiling numba kernels: " in out and "compiled 1 numba kernels" in out


def test_stamps(tmp_path, monkeypatch):
    monkeypatch.setattr(jit, "cache_dir", lambda: tmp_path)
    src = tmp_path / "k.py"
    src.write_text("x = 1\n")
    assert not jit.is_warm("g", [str(src)])
    jit.mark_warm("g", [str(src)])
    assert jit.is_warm("g", [str(src)])
    src.write_text("x = 22\n")  # a changed source: numba recompiles it, the stamp no longer holds
    assert not jit.is_warm("g", [str(src)])
