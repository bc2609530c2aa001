"""The channel policy: which exporter the uploader hands batches to, from what the exporters say."""

from __future__ import annotations

from curvestream.channels import FallbackPolicy
from curvestream.exporters import SUCCESS, Outcome


class Exporter:
    def __init__(self, name: str, down_since: float | None = None) -> None:
        self.name = name
        self.since = down_since
        self.refusing = False

    def export(self, topic: str, payload: bytes) -> Outcome:
        return SUCCESS

    def down_since(self) -> float | None:
        return self.since

    def refused(self) -> bool:
        return self.refusing

    def shutdown(self, timeout: float = 2.0) -> None:
        pass


def test_the_primary_while_it_is_up_then_nothing_until_the_fallback_time_then_the_fallback():
    primary, fallback = Exporter("mqtt"), Exporter("http")
    policy = FallbackPolicy(primary, fallback, fallback_after_s=10)
    assert policy.choose(now=50.0) is primary
    primary.since = 45.0
    assert policy.choose(now=50.0) is None, "a short outage: the batches wait in the spool"
    assert policy.choose(now=55.0) is fallback
    primary.since = None
    assert policy.choose(now=56.0) is primary, "back to the primary as soon as it is up"


def test_without_a_fallback_batches_wait_and_without_a_primary_the_fallback_takes_them():
    primary = Exporter("mqtt", down_since=0.0)
    assert FallbackPolicy(primary, None, 10).choose(now=1e6) is None
    fallback = Exporter("http")
    assert FallbackPolicy(None, fallback, 10).choose(now=0.0) is fallback
    assert FallbackPolicy(primary, fallback, 10).exporters == [primary, fallback]


def test_a_primary_that_refuses_the_connection_gives_way_to_the_fallback_at_once():
    primary, fallback = Exporter("mqtt", down_since=50.0), Exporter("http")
    policy = FallbackPolicy(primary, fallback, fallback_after_s=10)
    assert policy.choose(now=50.5) is None, "down, not refused: a short outage"
    primary.refusing = True
    assert policy.choose(now=50.5) is fallback, "nothing listens at the broker's address: no wait"
    assert FallbackPolicy(primary, None, 10).choose(now=50.5) is None, "without a fallback the batches wait"
    primary.since, primary.refusing = None, False
    assert policy.choose(now=51.0) is primary
