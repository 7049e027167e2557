"""The report page: one self-contained HTML file rendered from the report document with
Jinja2 (autoescape on, undefined names an error) — no script, no request beyond itself (a
Content-Security-Policy that allows only its own stylesheet, by hash), printable to PDF.

It owns the page's markup and how hostile text is made inert: every string a worker could
have written is escaped by the template engine, its bidirectional and other invisible
controls are shown as `<U+202E>` instead of being obeyed, and it is isolated from its
neighbours' text direction. It builds nothing from the ledger itself (`review.document`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from groundskeeper.review.timeline import inert

#: Findings listed in the banner; the rest are counted (`ledger verify --json` has all).
MAX_FINDINGS = 50
#: A line's body is shown as JSON up to this many characters.
BODY_SHOWN = 8 * 1024


def body_json(body: object) -> str:
    shown = json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True)
    if len(shown) > BODY_SHOWN:
        shown = shown[:BODY_SHOWN] + f"\n… {len(shown) - BODY_SHOWN} more characters not shown"
    return shown


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("groundskeeper.review", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["inert"] = inert
    env.filters["body_json"] = body_json
    return env


@cache
def _stylesheet() -> str:
    return (resources.files("groundskeeper.review") / "templates" / "report.css").read_text(
        encoding="utf-8"
    )


def content_security_policy(css: str) -> str:
    """Nothing may load or run: no script, frame, image, font, form target or base; the one
    stylesheet is allowed by its hash (so an injected `<style>` would not apply either)."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; "
        f"style-src 'sha256-{digest}'; "
        "img-src 'none'; font-src 'none'; script-src 'none'; connect-src 'none'; "
        "frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
    )


def render_page(document: dict[str, Any]) -> str:
    """The HTML page of a report document (`review.document.build_document`)."""
    css = _stylesheet()
    line_anchor = {
        entry["line"]: entry["anchor"]
        for run in document["timeline"]
        for group in run["groups"]
        for entry in group["entries"]
    }
    altered: dict[int, list[str]] = {}
    for finding in document["integrity"]["findings"]:
        if finding["line"] is not None:
            altered.setdefault(finding["line"], []).append(finding["code"])
    template = _environment().get_template("report.html.j2")
    return template.render(
        doc=document,
        altered=altered,
        css=css,
        csp=content_security_policy(css),
        line_anchor=line_anchor,
        max_findings=MAX_FINDINGS,
    )
