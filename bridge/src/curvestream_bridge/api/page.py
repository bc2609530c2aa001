"""The page at ``/``: the built bundle, or a note saying how to build it."""

from __future__ import annotations

import pathlib

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["mount_page", "STATIC_DIR"]

STATIC_DIR = pathlib.Path(__file__).resolve().parent.parent / "static"

NOT_BUILT = ("<!doctype html><title>curvestream</title><h1>curvestream bridge</h1>"
             "<p>The page bundle is not built. Run <code>make page</code> (or <code>npm ci && npm run build"
             "</code> in panels/echarts-plugin), then restart. The API is at <a href='/docs'>/docs</a>.</p>")


def _not_built() -> str:
    return NOT_BUILT


def mount_page(app: FastAPI) -> None:
    """Last, after every API route: ``/`` catches every path."""
    if STATIC_DIR.joinpath("index.html").exists():
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="page")
    else:
        app.add_api_route("/", _not_built, response_class=HTMLResponse, include_in_schema=False)
