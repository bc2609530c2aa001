"""The MQTT topics of the v1 contract.

    >>> Topics.points("mnist", "lr=0.1/bs 64")
    'curvestream/v1/mnist/lr=0.1%2Fbs 64/points'
    >>> Topics.parse(Topics.status("a+b", "r1"))
    ('a+b', 'r1', 'status')
"""

from __future__ import annotations

from curvestream_wire.names import decode_segment, encode_segment

__all__ = ["PREFIX", "Topics"]

PREFIX = "curvestream/v1"


class Topics:
    """Topic names of the v1 contract.

    >>> Topics.points("mnist", "r1")
    'curvestream/v1/mnist/r1/points'
    >>> Topics.commit(bytes.fromhex("00ff"))
    'curvestream/v1/commit/00ff'
    >>> Topics.session(bytes.fromhex("0a0b"))
    'curvestream/v1/session/0a0b'
    >>> Topics.parse_session("curvestream/v1/session/0a0b")
    b'\\n\\x0b'
    """

    POINTS_FILTER = f"{PREFIX}/+/+/points"
    META_FILTER = f"{PREFIX}/+/+/meta"
    STATUS_FILTER = f"{PREFIX}/+/+/status"
    SESSION_FILTER = f"{PREFIX}/session/+"

    @staticmethod
    def _run(project: str, run: str, leaf: str) -> str:
        return f"{PREFIX}/{encode_segment(project)}/{encode_segment(run)}/{leaf}"

    @classmethod
    def points(cls, project: str, run: str) -> str:
        return cls._run(project, run, "points")

    @classmethod
    def meta(cls, project: str, run: str) -> str:
        return cls._run(project, run, "meta")

    @classmethod
    def status(cls, project: str, run: str) -> str:
        return cls._run(project, run, "status")

    @classmethod
    def alerts(cls, project: str, run: str) -> str:
        """The bridge's alerts about a run (JSON, the object of ``GET /api/v1/alerts``)."""
        return cls._run(project, run, "alerts")

    @classmethod
    def watched(cls, project: str, run: str) -> str:
        """Retained by the bridge while a live page watches the run: the flush interval
        (ASCII decimal milliseconds) its trainers may shorten theirs to; empty: nobody watches."""
        return cls._run(project, run, "watched")

    @staticmethod
    def commit(producer_id: bytes) -> str:
        return f"{PREFIX}/commit/{producer_id.hex()}"

    @staticmethod
    def session(session_id: bytes) -> str:
        """The status of a client session (a RunStatus naming only the session), retained.
        Its LOST is the Last Will of a connection that several runs share: each of them
        still running is lost (each run's meta and status name their session)."""
        return f"{PREFIX}/session/{session_id.hex()}"

    @staticmethod
    def parse_session(topic: str) -> bytes | None:
        """The session id of a session topic, or None when it is not one."""
        head, _, tail = topic.rpartition("/")
        if head != f"{PREFIX}/session" or not tail:
            return None
        try:
            return bytes.fromhex(tail)
        except ValueError:
            return None

    @staticmethod
    def parse(topic: str) -> tuple[str, str, str] | None:
        """``(project, run, leaf)`` of a run topic, or None when it is not one."""
        parts = topic.split("/")
        if len(parts) != 5 or f"{parts[0]}/{parts[1]}" != PREFIX:
            return None
        try:
            return decode_segment(parts[2]), decode_segment(parts[3]), parts[4]
        except UnicodeDecodeError:
            return None
