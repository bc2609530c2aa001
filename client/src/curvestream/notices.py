"""What the client tells the person running the script: one line each time
something needs their attention, nothing while all is well.

    curvestream: the broker at mqtt://127.0.0.1:1883 does not answer; sending to the bridge over HTTP (…) instead
    curvestream: neither the broker at … nor the bridge at … takes the points (…); they wait in the spool …
    curvestream: run mnist/lr=0.1-k3x9q2: 2 batches (~6,000 points) wait in the spool; send them with `curvestream sync`

Lines go to the ``curvestream`` logger at WARNING. With no logging set up
(the usual training script), Python writes such records to stderr as they
are (``logging.lastResort``); a program that configures logging gets them
where it sends its own records, once. A notice about the connection is said
once per process, however often the connection comes and goes.
"""

from __future__ import annotations

import logging
import pathlib
import shlex
import threading

from curvestream.settings import Settings, default_spool_dir

__all__ = ["say", "say_once", "fallback", "unreachable", "left_in_spool", "all_delivered", "sync_command",
           "trouble_said"]

log = logging.getLogger("curvestream")

_said: set[str] = set()
_lock = threading.Lock()
_TROUBLE = ("fallback", "unreachable")


def say(message: str) -> None:
    log.warning(message)


def say_once(kind: str, message: str) -> bool:
    """Say ``message`` unless a notice of this kind was said already in this process; True when said."""
    with _lock:
        if kind in _said:
            return False
        _said.add(kind)
    say(message)
    return True


def trouble_said() -> bool:
    """Whether this process told of an unreachable broker or bridge."""
    with _lock:
        return any(kind in _said for kind in _TROUBLE)


def _broker(settings: Settings) -> str:
    endpoint = settings.mqtt_endpoint()
    return f"{'mqtts' if endpoint.tls else 'mqtt'}://{endpoint.host}:{endpoint.port}"  # never the password


def fallback(settings: Settings, reason: str) -> None:
    """The broker is unreachable: batches go to the bridge over HTTP."""
    why = f" ({reason})" if reason else ""
    say_once("fallback", f"curvestream: the broker at {_broker(settings)} does not answer{why}; sending to the "
                         f"bridge over HTTP ({settings.bridge_url}) instead")


def unreachable(settings: Settings, reason: str) -> None:
    """Neither the broker nor the bridge takes the batches: they stay in the spool."""
    why = f" ({reason})" if reason else ""
    where = (f"neither the broker at {_broker(settings)} nor the bridge at {settings.bridge_url} takes the points"
             if settings.bridge_url else
             f"the broker at {_broker(settings)} does not answer and no bridge URL is set (CURVESTREAM_BRIDGE_URL)")
    say_once("unreachable", f"curvestream: {where}{why}; they wait in the spool {settings.spool_dir} and go out as "
                            "soon as one answers")


def left_in_spool(label: str, batches: int, points: int, settings: Settings, why: str = "") -> None:
    """At the end of a run: what stays in the spool, and the command that sends it."""
    approx = f" (~{points:,} point{'s' if points != 1 else ''})" if points else ""
    because = f"{why}; " if why else ""
    count = f"1 batch{approx} waits" if batches == 1 else f"{batches:,} batches{approx} wait"
    say(f"curvestream: {label}: {because}{count} in the spool {settings.spool_dir}; send "
        f"{'it' if batches == 1 else 'them'} with `{sync_command(settings)}`")


def all_delivered(label: str) -> None:
    """The end of a run after trouble was reported: it came right in the end."""
    say(f"curvestream: {label}: every batch reached the bridge")


def sync_command(settings: Settings) -> str:
    """The ``curvestream sync`` command that sends this spool from a shell with this environment."""
    try:
        shell = Settings.from_env()
    except ValueError:
        shell = Settings()
    words = []
    if settings.bridge_url and settings.bridge_url != shell.bridge_url:
        words.append("CURVESTREAM_BRIDGE_URL=" + shlex.quote(settings.bridge_url))
    if settings.mqtt_url != shell.mqtt_url and settings.mqtt_endpoint().password is None:
        words.append("CURVESTREAM_MQTT_URL=" + shlex.quote(settings.mqtt_url))
    words.append("curvestream sync")
    if pathlib.Path(settings.spool_dir).resolve() != pathlib.Path(default_spool_dir()).resolve():
        words.append(shlex.quote(settings.spool_dir))
    return " ".join(words)
