"""Trainer accounts for a locked-down Mosquitto: a password-file line and the
ACL block that lets one account write its project's topics and nothing else.

    >>> block = acl_block("mnist", "trainer-mnist")
    >>> print(block)
    # trainer account of project mnist
    user trainer-mnist
    topic write curvestream/v1/mnist/+/points
    topic write curvestream/v1/mnist/+/meta
    topic write curvestream/v1/mnist/+/status
    topic read curvestream/v1/mnist/+/alerts
    topic read curvestream/v1/mnist/+/watched
    topic read curvestream/v1/commit/+
    <BLANKLINE>
    >>> password_line("trainer-mnist", "s3cret").startswith("trainer-mnist:$7$101$")
    True

Commits are read-only for trainers: any trainer may read a commit (it holds
seq ranges, never data), only the bridge account may write one, so nobody can
fake the commit that lets a trainer delete its spool.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets

from curvestream_wire import names
from curvestream_wire.topics import PREFIX

__all__ = ["acl_block", "password_line", "new_password", "add_user"]

# Mosquitto 2's own format ($7$: PBKDF2-SHA512, 101 rounds, a 12-byte salt), as mosquitto_passwd writes it.
_ROUNDS = 101
_SALT_BYTES = 12
_FORBIDDEN_IN_USER = frozenset(":\n\r\t #+/")


def _check_user(user: str) -> str:
    if not user or any(c in _FORBIDDEN_IN_USER for c in user):
        raise ValueError(f"curvestream: MQTT user {user!r} must be non-empty, without spaces, ':', '#', '+' or '/'")
    return user


def password_line(user: str, password: str, salt: bytes | None = None) -> str:
    """One line of a Mosquitto 2 password file."""
    salt = os.urandom(_SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, _ROUNDS)
    return f"{_check_user(user)}:$7${_ROUNDS}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def acl_block(project: str, user: str) -> str:
    """The Mosquitto ACL lines of one trainer account of ``project``."""
    segment = names.encode_segment(names.validate_name("project name", project))
    if "#" in segment or "+" in segment:  # encode_segment escapes both; never widen an ACL by accident
        raise ValueError(f"curvestream: project {project!r} cannot be written into an ACL")
    run_topics = f"{PREFIX}/{segment}/+"
    return (f"# trainer account of project {project}\n"
            f"user {_check_user(user)}\n"
            f"topic write {run_topics}/points\n"
            f"topic write {run_topics}/meta\n"
            f"topic write {run_topics}/status\n"
            f"topic read {run_topics}/alerts\n"
            f"topic read {run_topics}/watched\n"  # the bridge's hint: a live page watches, flush sooner
            f"topic read {PREFIX}/commit/+\n")


def new_password() -> str:
    return secrets.token_urlsafe(24)


def add_user(project: str, user: str, password: str, passwd_file: str | None, acl_file: str | None) -> list[str]:
    """Append the account to the files that are given; return what is left to print."""
    line, block = password_line(user, password), acl_block(project, user)
    out: list[str] = []
    for path, text in ((passwd_file, line + "\n"), (acl_file, "\n" + block)):
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(path, 0o600 if path == passwd_file else 0o644)
        else:
            out.append(text.strip("\n"))
    return out
