"""Engine adapter of keyed window aggregates (``where`` / ``group_by``): one group per (agg,
column, time column, key columns, ranges), created by ``WindowGroup`` for keyed params.

Keys: the tuple of the key columns' texts (as threshold equalities and substream keys compare
them), joined with ``\\x1f`` into one text, encoded to int64 codes once per batch with Arrow
(``index_in`` against the known keys; new keys appended), so no Python loop runs per row. A
query with only equalities (every key column fixed) reads one key; a ``group_by`` query reads
every key matching its equalities and answers one value per key whose window holds an element
(:class:`vigil.group.PerKey`: the engine emits one ``answer`` per key, its group_by columns' texts
in ``keys``, by key; one answer with an empty key list when no key has an element).

Rows each query sees (docs/contract.md): a keyed query the rows matching its equalities, a
group_by query every row (or those matching its equalities); the value and range columns are
checked on those rows, the key columns on the rows of group_by queries (a null key is rejected,
as for substream filters), the time column on every row (the window's clock is the stream's).
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..group import Group, PerKey
from ..specs import where_keys
from .keyed import KeyedWindows
from .oracle import KeyedOracle, WindowOracle

SEP = "\x1f"
_TOKENS = itertools.count()


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


class KeyedWindowGroup(Group):
    family = "windows"
    independent = False  # the rows it checks depend on the keys its queries read: no deferred terminations

    def __init__(self, engine: Any, params: dict[str, Any]) -> None:
        super().__init__(engine, params)
        impl = engine.impl("windows")
        cls = KeyedOracle if issubclass(impl, WindowOracle) else KeyedWindows
        self.op = cls(params["agg"], params["time_column"] is not None)
        self.kc: list[str] = list(params["keys"])
        self.token = str(next(_TOKENS))
        self._ver = 0  # bumped when the keys read change (visibility cache)
        self.texts: list[str] = []  # code -> key text
        self.code: dict[str, int] = {}
        self.known = pa.array([], pa.string())
        self._w = np.zeros(0, np.int64)  # capacity of wanted
        self.wanted = self._w  # code -> queries reading it (keyed + matching group_by)
        self.n_all = 0  # group_by queries without equalities: every key is read
        self.gq: dict[int, tuple[list, list[int]]] = {}  # group_by qid -> ([(key pos, text)], report pos)
        self._rep_cache: dict[tuple, tuple] = {}
        self._mcache: dict[tuple, tuple[int, np.ndarray]] = {}  # equalities -> (keys known, matching)  # report positions -> (keys known, key texts, rank)

    def time_column(self):
        return self.params["time_column"]

    # ------------------------------------------------------------------ keys
    def _add(self, new: list[str]) -> None:
        self._ver += 1
        k0 = len(self.texts)
        self.texts.extend(new)
        self.code.update((t, k0 + i) for i, t in enumerate(new))
        n = len(self.texts)
        if n > len(self._w):  # capacity doubles: O(1) amortized per new key
            w = np.zeros(max(n, 2 * len(self._w), 16), np.int64)
            w[:k0] = self._w[:k0]
            self._w = w
        self.wanted = self._w[:n]
        for fx, _ in self.gq.values():
            if fx:
                self.wanted[k0:] += self._match(fx, k0)
        self.op.keys(n)

    def _known(self) -> pa.Array:
        """The known key texts as an Arrow array (rebuilt only when keys were added)."""
        if len(self.known) != len(self.texts):
            self.known = pa.array(self.texts, pa.string())
        return self.known

    def _match(self, fx: list, k0: int = 0) -> np.ndarray:
        """Which keys (codes >= k0) have the texts fx = [(pos, text)] at those positions."""
        parts = [t.split(SEP) if len(self.kc) > 1 else [t] for t in self.texts[k0:]]
        return np.array([all(p[i] == x for i, x in fx) for p in parts], bool)

    def _matches(self, fx: list) -> np.ndarray:
        """_match over every key, extended only for the keys added since the last call."""
        n, m = self._mcache.get(tuple(fx), (0, np.zeros(0, bool)))
        if n < len(self.texts):
            m = np.concatenate([m, self._match(fx, n)])
            self._mcache[tuple(fx)] = (len(self.texts), m)
        return m

    def _code_of(self, text: str) -> int:
        if text not in self.code:
            self._add([text])
        return self.code[text]

    def _encode(self, cols) -> np.ndarray:
        """Key codes of every row of the batch (-1: a null key column), once per batch."""
        ck = ("\x00keyed", self.token)  # this group's codes (its own dictionary)
        hit = cols.cache.get(ck)
        if hit is not None:
            return hit[0]
        t = cols.table
        n = t.num_rows
        if not self.kc:
            codes = np.full(n, self._code_of(""), np.int64)
        else:
            arrs = []
            for c in self.kc:
                a = t.column(c).combine_chunks() if c in t.column_names else pa.nulls(n, pa.string())
                if not pa.types.is_string(a.type):
                    try:
                        a = pc.cast(a, pa.string())
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                        a = pa.nulls(n, pa.string())
                arrs.append(a)
            arr = arrs[0] if len(arrs) == 1 else pc.binary_join_element_wise(*arrs, SEP)
            idx = pc.index_in(arr, value_set=self._known())
            new = pc.and_(pc.is_null(idx), pc.is_valid(arr))
            if pc.any(new).as_py():
                self._add(pc.unique(pc.filter(arr, new)).to_pylist())
                idx = pc.index_in(arr, value_set=self._known())
            codes = np.asarray(pc.fill_null(idx, -1).to_numpy(zero_copy_only=False), np.int64)
        cols.cache[ck] = (codes, {})
        return codes

    # ------------------------------------------------------------------ rows
    def _read(self, codes: np.ndarray) -> np.ndarray:
        """Rows whose key some query reads."""
        if not len(self.wanted):
            return np.zeros(len(codes), bool)
        return (codes >= 0) & (self.wanted[np.maximum(codes, 0)] > 0)

    def checks(self, cols, idx):
        p = self.params
        refs = [(p["column"], "num")] if p["column"] else []
        refs += [(c, "num") for c, _, _ in p["ranges"]]
        if self.n_all:
            out = [(None, refs + [(c, "key") for c in self.kc])]
        else:  # the rows of the keys read, over the whole batch once per set of queries
            ck = ("\x00keyed-read", self.token + ":" + str(self._ver))
            if ck not in cols.cache:
                cols.cache[ck] = (self._read(self._encode(cols)), {})
            out = [(cols.cache[ck][0][idx], refs)]
        if p["time_column"]:
            out.append((None, [(p["time_column"], "time")]))
        return out

    def feed(self, cols, rows, seqs, seg):
        vals = self.values(cols, rows)
        times = None
        if self.params["time_column"]:
            times = cols.get(self.params["time_column"], "time")[0][rows]
            if len(times):
                self.t_last = float(times[-1])
        codes = self._encode(cols)[rows]
        keep = codes >= 0 if self.n_all else self._read(codes)
        for c, lo, hi in self.params["ranges"]:
            v = cols.get(c, "num")[0][rows]
            keep &= (v >= (-math.inf if lo is None else lo)) & (v <= (math.inf if hi is None else hi))
        self.op.push(vals, seqs, times, np.where(keep, codes, -1))

    # ------------------------------------------------------------------ queries
    def register(self, qid: int, spec: Any, start: int) -> None:
        self._ver += 1
        fixed = dict(where_keys(spec.where or {}))
        gb = spec.group_keys()
        if not gb:
            code = self._code_of(SEP.join(_text(fixed[c]) for c in self.kc))
            self.op.register(qid, spec, start, code)
            self.wanted[code] += 1
            return
        fx = [(i, _text(fixed[c])) for i, c in enumerate(self.kc) if c in fixed]
        self.op.register(qid, spec, start, -1)
        self.gq[int(qid)] = (fx, [self.kc.index(c) for c in gb])
        if fx:
            self.wanted += self._matches(fx)
        else:
            self.n_all += 1

    def terminate(self, qid: int) -> None:
        self._ver += 1
        qid = int(qid)
        g = self.gq.pop(qid, None)
        if g is None:
            key = self.op.q[qid][0] if isinstance(self.op, KeyedWindows) else self.op._q[qid][0]
            self.wanted[key] -= 1
        elif g[0]:
            self.wanted -= self._matches(g[0])
        else:
            self.n_all -= 1
        self.op.terminate(qid)

    def lookup_many(self, qids: np.ndarray, n: int) -> list[tuple[Any, list[str] | None]]:
        out: list[tuple[Any, list[str] | None]] = [(None, None)] * len(qids)
        plain = [i for i, q in enumerate(qids.tolist()) if q not in self.gq]
        if plain:
            v = self.op.lookup(qids[plain], n, self.t_last)
            for i, x in zip(plain, v.tolist(), strict=True):
                out[i] = (None if math.isnan(x) else x, None)
        for i, q in enumerate(qids.tolist()):
            if q in self.gq:
                fx, rep = self.gq[q]
                cand = np.flatnonzero(self._matches(fx)) if fx else np.arange(len(self.texts))
                codes, vals = self.op.lookup_group(q, cand, self.t_last)
                keys, rank = self._reports(rep)
                o = np.argsort(rank[codes], kind="stable")
                out[i] = (PerKey(zip([keys[k] for k in codes[o].tolist()], vals[o].tolist(), strict=True)), None)
        return out

    def _reports(self, rep: list[int]) -> tuple[list[list[str]], np.ndarray]:
        """Per key code, the texts of its group_by columns ``rep``, and each code's rank in their
        order (cached until new keys arrive)."""
        ck = (tuple(rep), len(self.texts))
        if self._rep_cache.get(ck[0], (None,))[0] != ck[1]:
            parts = [t.split(SEP) for t in self.texts] if len(self.kc) > 1 else [[t] for t in self.texts]
            keys = [[p[i] for i in rep] for p in parts]
            rank = np.empty(len(keys), np.int64)
            rank[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
            self._rep_cache[ck[0]] = (ck[1], keys, rank)
        _, keys, rank = self._rep_cache[ck[0]]
        return keys, rank

    # ------------------------------------------------------------------ snapshots
    def state(self):
        return {**super().state(), "texts": self.texts, "wanted": self.wanted.copy(), "n_all": self.n_all,
                "gq": [[q, [list(x) for x in fx], rep] for q, (fx, rep) in self.gq.items()]}

    def load(self, s):
        super().load(s)
        self.texts = list(s["texts"])
        self.code = {t: i for i, t in enumerate(self.texts)}
        self.known = pa.array(self.texts, pa.string())
        self._w = np.array(s["wanted"], np.int64)
        self.wanted = self._w[:]
        self.n_all = int(s["n_all"])
        self.gq = {int(q): ([(int(i), x) for i, x in fx], [int(r) for r in rep]) for q, fx, rep in s["gq"]}
        self.op.keys(len(self.texts))
