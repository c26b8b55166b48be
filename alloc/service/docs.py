"""The interactive API page (``GET /docs``) served from this machine only.

FastAPI's default page loads Swagger UI from a CDN, which fails off-line and
sends every visitor's browser elsewhere.  This page loads Swagger UI 5 (which
reads OpenAPI 3.1) from the `swagger-ui-bundle-v2` package (part of the
`service` extra), served at ``/docs/assets/``.  Without that package,
``/docs`` says how to install it and points to ``/openapi.json``, which any
OpenAPI viewer reads.  No page loads anything from another host.
"""
from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

#: Where the page's script, style sheet and icon are served.
ASSETS = "/docs/assets"
#: The page shown when `swagger-ui-bundle-v2` is absent.
NO_ASSETS = ("<!DOCTYPE html><html><head><title>alloc API</title></head><body>"
             "<p>The interactive page needs the <code>swagger-ui-bundle-v2</code> package "
             "(part of the <code>service</code> extra). The OpenAPI document is at "
             "<a href=\"/openapi.json\">/openapi.json</a>.</p></body></html>")


def assets_dir() -> Path | None:
    """The Swagger UI files of `swagger-ui-bundle-v2`, or None when absent."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        return None
    path = Path(str(swagger_ui_path))
    return path if (path / "swagger-ui-bundle.js").is_file() else None


def add_docs(app: FastAPI) -> None:
    """``GET /docs`` with local assets (the app is made with ``docs_url=None``)."""
    assets = assets_dir()
    if assets is not None:
        from fastapi.staticfiles import StaticFiles
        app.mount(ASSETS, StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        if assets is None:
            return HTMLResponse(NO_ASSETS)
        from fastapi.openapi.docs import get_swagger_ui_html
        return get_swagger_ui_html(openapi_url=app.openapi_url or "", title=f"{app.title} API",
                                   swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS}/favicon-32x32.png")


__all__ = ["add_docs", "assets_dir"]
