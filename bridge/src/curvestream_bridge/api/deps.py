"""The dependencies every route shares: the bridge's facade and the token check.

One check serves HTTP and WebSocket alike: the token comes from
``Authorization: Bearer <token>`` or, where a header cannot be set (a
browser's WebSocket), from ``?token=``. Over HTTP a missing token answers 401
and a wrong one 403; a WebSocket is closed with 1008 (policy violation)
before it is accepted.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, WebSocketException
from starlette.requests import HTTPConnection
from starlette.websockets import WebSocket

from curvestream_bridge.api.facade import BridgeApi

__all__ = ["bridge_api", "Api", "can_read", "can_write", "READ", "WRITE"]


def bridge_api(conn: HTTPConnection) -> BridgeApi:
    return conn.app.state.bridge_api


Api = Annotated[BridgeApi, Depends(bridge_api)]


def _given_token(conn: HTTPConnection) -> str:
    header = conn.headers.get("authorization", "")
    return header[7:] if header.lower().startswith("bearer ") else conn.query_params.get("token", "")


def _check(conn: HTTPConnection, token: str) -> None:
    if not token:
        return
    given = _given_token(conn)
    if given and hmac.compare_digest(given.encode(), token.encode()):
        return
    why = "wrong token" if given else "missing bearer token"
    if isinstance(conn, WebSocket):
        raise WebSocketException(code=1008, reason=why)
    if given:
        raise HTTPException(403, why)
    raise HTTPException(401, why, headers={"WWW-Authenticate": "Bearer"})


def can_read(conn: HTTPConnection, api: Api) -> None:
    """Reads (and the live WebSocket) need the read token when one is set."""
    _check(conn, api.read_token)


def can_write(conn: HTTPConnection, api: Api) -> None:
    """Writes need the write token when one is set."""
    _check(conn, api.write_token)


READ = [Depends(can_read)]
WRITE = [Depends(can_write)]
