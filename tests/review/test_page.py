"""The page as markup: self-contained (a CSP that allows only its own stylesheet, by hash),
and every string a worker wrote inert — escaped, its invisible controls shown, never
markup. The browser tests (test_browser.py) look at the same pages as a reviewer does."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

from groundskeeper.record.keys import read_public_keys
from groundskeeper.review.document import build_document
from groundskeeper.review.page import inert, render_page
from groundskeeper.review.snapshot import read_snapshot
from tests.review.conftest import HOSTILE, Hostile


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of <style> and <title>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: dict[str, list[str]] = {"style": [], "title": []}
        self.text: list[str] = []
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open = tag if tag in self.texts else None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open is not None:
            self.texts[self._open].append(data)

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def page_of(work: Path, key: Path) -> str:
    snapshot = read_snapshot(work, read_public_keys(key))
    return render_page(build_document(snapshot))


def test_hostile_strings_stay_text(hostile: Hostile) -> None:
    html = page_of(hostile.run.work, hostile.run.key)
    parsed = Elements()
    parsed.feed(html)
    assert parsed.named("script") == []
    assert parsed.named("img") == [] and parsed.named("link") == []
    assert [m.get("http-equiv") for m in parsed.named("meta")] == [
        None,
        "Content-Security-Policy",
        None,
        None,
    ]
    assert len(parsed.named("style")) == 1
    assert [s.get("id") for s in parsed.named("section")] == [
        "integrity",
        "summary",
        "tasks",
        "timeline",
    ]
    assert parsed.named("h1") == [{}]  # the page's own; the worker's `<h1 id=pwned>` is text
    # each hostile string is on the page as the text it is
    text = "".join(parsed.text)
    for hostile_string in (HOSTILE["pre"], HOSTILE["script"], HOSTILE["refresh"], HOSTILE["css"]):
        assert text.count(hostile_string) >= 3  # claim, check reason, judge reason at least
    # the fake banner sits inside the task table and the timeline, never as a section
    assert html.count('id="integrity"') == 1


def test_invisible_controls_are_shown_not_obeyed(hostile: Hostile) -> None:
    html = page_of(hostile.run.work, hostile.run.key)
    for char in ("\u202e", "\u2066", "\u2069", "\u200b"):
        assert char not in html
    assert "&lt;U+202E&gt;" in html and "&lt;U+2066&gt;" in html
    assert inert("a\u202eb\tc\nd\x1b") == "a<U+202E>b\tc\nd<U+001B>"


def test_a_huge_output_is_cut_and_counted(hostile: Hostile) -> None:
    html = page_of(hostile.run.work, hostile.run.key)
    assert "A" * 16_384 in html and "A" * 16_385 not in html
    assert f"… {len(hostile.huge_output) - 16_384} more characters not shown" in html
    assert len(html.encode()) < 1_000_000


def test_the_policy_allows_only_the_page_s_own_stylesheet(hostile: Hostile) -> None:
    html = page_of(hostile.run.work, hostile.run.key)
    parsed = Elements()
    parsed.feed(html)
    policy = parsed.named("meta")[1]["content"] or ""
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'none'" and directives["base-uri"] == "'none'"
    css = "".join(parsed.texts["style"])
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    assert directives["style-src"] == f"'sha256-{digest}'"
    assert not re.search(r"\sstyle=", html)  # an inline style attribute would be refused


def test_the_title_says_broken_for_a_broken_ledger(hostile: Hostile) -> None:
    ledger = hostile.run.ledger
    ledger.write_bytes(ledger.read_bytes().replace(b'"verdict":"FAIL"', b'"verdict":"PASS"'))
    parsed = Elements()
    parsed.feed(page_of(hostile.run.work, hostile.run.key))
    assert parsed.texts["title"] == ["groundskeeper report: LEDGER BROKEN"]
    assert parsed.named("section")[0]["class"] == "broken"
