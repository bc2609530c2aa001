"""Which exporter takes the batches now: a small policy the uploader asks each round.

    >>> class Stub:
    ...     def __init__(self, name, down_since=None): self.name, self.since = name, down_since
    ...     def down_since(self): return self.since
    ...     def refused(self): return False
    >>> mqtt, http = Stub("mqtt"), Stub("http")
    >>> policy = FallbackPolicy(mqtt, http, fallback_after_s=10)
    >>> policy.choose(now=100.0).name
    'mqtt'
    >>> mqtt.since = 95.0                  # down for 5 s: wait for it
    >>> policy.choose(now=100.0) is None
    True
    >>> policy.choose(now=106.0).name      # down for 11 s: the fallback
    'http'
    >>> mqtt.refused = lambda: True        # nothing listens at the broker's address: no wait
    >>> policy.choose(now=95.0).name
    'http'
"""

from __future__ import annotations

from curvestream.exporters import Exporter

__all__ = ["FallbackPolicy"]


class FallbackPolicy:
    """The primary exporter while it is up; the fallback once the primary has been
    down for ``fallback_after_s``, or at once when its connection is refused (a broker
    that is not running will not answer by waiting); none in between (the spool keeps
    the batches)."""

    def __init__(self, primary: Exporter | None, fallback: Exporter | None = None,
                 fallback_after_s: float = 10.0) -> None:
        self.primary = primary
        self.fallback = fallback
        self.fallback_after_s = fallback_after_s

    @property
    def exporters(self) -> list[Exporter]:
        return [e for e in (self.primary, self.fallback) if e is not None]

    def choose(self, now: float) -> Exporter | None:
        if self.primary is not None:
            since = self.primary.down_since()
            if since is None:
                return self.primary
            if self.fallback is not None and (now - since >= self.fallback_after_s or self.primary.refused()):
                return self.fallback
            return None
        return self.fallback
