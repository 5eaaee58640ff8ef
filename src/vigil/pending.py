"""The engine's queue of pending operations: (at, arrival, op) sorted by (at, arrival), consumed
from the front.

A list with a head index: taking the first k entries is O(k) and the consumed prefix is dropped
once it is half the list (amortized O(1) per entry). Slicing a plain list at every take cost
O(pending) per segment, i.e. quadratic time when a batch holds many lookups or registrations at
distinct positions (100,000 lookups: 248 us each)."""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

Entry = tuple[int, int, Any]


class Pending:
    __slots__ = ("_items", "_head")

    def __init__(self, items: Iterable[Entry] = ()) -> None:
        self._items: list[Entry] = sorted(items, key=_order)
        self._head = 0

    def __len__(self) -> int:
        return len(self._items) - self._head

    def __bool__(self) -> bool:
        return len(self._items) > self._head

    def __getitem__(self, k: int) -> Entry:
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self._items[self._head + k]

    def __iter__(self) -> Iterator[Entry]:
        # lazy: callers often look at the first few entries only
        return map(self._items.__getitem__, range(self._head, len(self._items)))

    def add(self, entries: list[Entry]) -> None:
        """Merge ``entries`` in (stable: equal keys keep their arrival numbers' order)."""
        if not entries:
            return
        items = self._items[self._head:] if self._head else self._items
        ordered = not items or _order(items[-1]) <= _order(entries[0])
        items.extend(entries)
        if not (ordered and _in_order(entries)):
            items.sort(key=_order)  # two sorted runs: linear for timsort
        self._items, self._head = items, 0

    def peek(self, i: int, j: int) -> list[Entry]:
        """Entries i..j-1 (from the first), left in place."""
        h = self._head
        return self._items[h + i:h + min(j, len(self))]

    def take(self, k: int) -> list[Entry]:
        """Remove and return the first k entries."""
        h = self._head
        out = self._items[h:h + k]
        self._head = h + len(out)
        if self._head > 1024 and 2 * self._head > len(self._items):
            del self._items[: self._head]
            self._head = 0
        return out

    def count_upto(self, at: int) -> int:
        """How many entries, from the first, have ``at`` <= at."""
        return bisect.bisect_right(self._items, at, lo=self._head, key=_at) - self._head


def _in_order(entries: list[Entry]) -> bool:
    """Whether ``entries`` are sorted by (at, arrival), checked without building a key per entry
    (``at`` ascending and arrival numbers increasing: the common case of a batch of operations)."""
    ats, arr = list(map(_at, entries)), list(map(_arrival, entries))
    return all(map(operator.le, ats, islice(ats, 1, None))) and all(map(operator.lt, arr, islice(arr, 1, None)))


_at = operator.itemgetter(0)  # an entry's at
_arrival = operator.itemgetter(1)
_order = operator.itemgetter(0, 1)  # its (at, arrival)
