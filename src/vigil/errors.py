"""Exceptions shared by the layers."""


class Unsupported(ValueError):
    """The chosen implementation cannot serve this query (e.g. MAX under R-INT); the reason is
    reported as a ``rejected`` event and the run goes on."""


class HistoryRefused(ValueError):
    """A join group cannot be created: the run's join-history horizon dropped rows it would need
    (vigil.history); the reason is reported as a ``rejected`` event and the run goes on."""
