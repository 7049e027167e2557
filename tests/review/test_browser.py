"""The report in a real browser, as a reviewer opens it: Debian's chromium driven by
Playwright (the system browser by `executable_path`; `make test` installs chromium through
`make browsers` when it is missing), JavaScript off, the page opened from disk.

They skip only where no chromium is installed."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.review.conftest import HOSTILE, VECTOR_KEY, VECTORS, Hostile, Run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (`make browsers` installs it)"),
]
TAMPERED = sorted(p.name for p in VECTORS.iterdir() if p.is_dir() and p.name != "valid")

if CHROMIUM is not None:
    from playwright.sync_api import Browser, Page, sync_playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    args = ["--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # chromium refuses to run as root with its sandbox
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        launched.close()


class Opened:
    """A page opened from disk with scripts off, and every request it made."""

    def __init__(self, browser: Browser, path: Path) -> None:
        self.context = browser.new_context(java_script_enabled=False)
        self.page: Page = self.context.new_page()
        self.requests: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.goto(path.as_uri())
        self.url = path.as_uri()

    def banner(self) -> str:
        return self.page.locator("#integrity-verdict").inner_text().strip()


def write_report(path: Path, out: Path, *keys: Path) -> int:
    args = ["report", str(path), "-o", str(out)]
    for key in keys:
        args += ["--key", str(key)]
    return CliRunner().invoke(main, args).exit_code


def test_each_tamper_vector_reads_broken_at_its_line(browser: Browser, tmp_path: Path) -> None:
    for name in TAMPERED:
        expected = json.loads((VECTORS / name / "expected.json").read_text())
        lines = sorted(f["line"] for f in expected["findings"] if f["line"] is not None)
        out = tmp_path / f"{name}.html"
        assert write_report(VECTORS / name, out, VECTOR_KEY) == 1
        opened = Opened(browser, out)
        banner = opened.banner()
        if lines:
            assert banner.startswith(f"✘ Ledger broken at line {lines[0]}"), (name, banner)
        else:
            assert banner.startswith("✘ Ledger broken ("), (name, banner)
        codes = opened.page.locator("#integrity .findings code").all_inner_texts()
        assert sorted(codes) == sorted(f["code"] for f in expected["findings"]), name
        opened.context.close()


def test_an_edited_copy_of_the_demo_reads_broken_at_the_edited_line(
    browser: Browser, demo: Run, tmp_path: Path
) -> None:
    lines = demo.ledger.read_bytes().splitlines(keepends=True)
    number = next(i for i, raw in enumerate(lines, 1) if b'"excerpt":"DONE: counted' in raw)
    lines[number - 1] = lines[number - 1].replace(b"DONE: counted", b"DONE: verified")
    demo.ledger.write_bytes(b"".join(lines))
    out = tmp_path / "edited.html"
    assert write_report(demo.work, out, demo.key) == 1
    opened = Opened(browser, out)
    # the checkpoint no longer names these lines either
    assert opened.banner() == f"✘ Ledger broken at line {number} (checkpoint-mismatch)"
    # the finding links to the line, and the line is marked where it stands
    link = opened.page.locator("#integrity .findings a").first
    assert link.inner_text() == f"line {number}"
    anchor = (link.get_attribute("href") or "").lstrip("#")
    assert "finding: bad-signature" in opened.page.locator(f"li#{anchor}").inner_text()
    # and the task table flags the claim read from it
    row = opened.page.locator("#tasks tr", has_text="DONE: verified the changes").inner_text()
    assert f"line {number}: bad-signature" in row and "NOT backed" in row


def test_the_demo_report_shows_claims_beside_checks(
    browser: Browser, demo: Run, tmp_path: Path
) -> None:
    out = tmp_path / "demo.html"
    assert write_report(demo.work, out, demo.key) == 0
    opened = Opened(browser, out)
    page = opened.page
    assert opened.banner() == "✔ Ledger intact"
    assert page.title() == "groundskeeper report: ledger intact"
    summary = page.locator("#summary").inner_text()
    assert "outline 1 invalid T005 → sent back to the author → outline 2 valid" in summary
    rows = page.locator("#tasks tbody.task tr")
    texts = rows.all_inner_texts()
    assert len(texts) == 5  # count ×2 attempts, draft ×2, the parent settled by its children
    lie = next(t for t in texts if "DONE: counted the changes" in t)
    assert "check FAIL" in lie and "nonzero_status" in lie and "claim refuted" in lie
    judged = next(t for t in texts if "three changes" in t)
    assert "check PASS" in judged and "judge fail J010" in judged
    successes = [t for t in texts if "check passed" in t]
    assert len(successes) == 2 and all("claimed:" in t for t in successes)
    # every attempt row shows a claim and a verdict
    attempt_rows = [t for t in texts if "no attempt" not in t]
    assert all("claimed:" in t and "check " in t for t in attempt_rows)
    # a failed check's group is open and its line visible; a clean group stays closed
    failed = page.locator("li.failed", has_text="nonzero_status").first
    assert failed.is_visible()
    closed = page.locator("details.group:not(.failed) ol.entries").first
    assert not closed.is_visible()
    # anchors: a line is reachable as #seq-N
    assert page.locator("#seq-1").count() == 1
    assert opened.requests == [opened.url]
    shot = tmp_path / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pdf = page.pdf()
    assert pdf[:5] == b"%PDF-" and len(pdf) > 10_000


def test_hostile_strings_stay_inert_and_nothing_is_fetched(
    browser: Browser, hostile: Hostile, tmp_path: Path
) -> None:
    out = tmp_path / "hostile.html"
    assert write_report(hostile.run.work, out, hostile.run.key) == 0
    opened = Opened(browser, out)
    page = opened.page
    page.wait_for_timeout(1500)  # a meta refresh of 0 s would have fired by now
    assert page.url == opened.url
    assert page.title() == "groundskeeper report: ledger intact"
    assert opened.requests == [opened.url]  # no image, stylesheet or refresh target
    assert page.locator("script").count() == 0
    assert page.locator("#pwned").count() == 0
    assert page.locator("section#integrity").count() == 1
    assert opened.banner() == "✔ Ledger intact"
    assert page.locator("body").is_visible()  # the injected `body{display:none}` did not apply
    text = page.locator("#tasks").inner_text()
    for hostile_string in (HOSTILE["pre"], HOSTILE["script"], HOSTILE["refresh"]):
        assert hostile_string in text
    assert "<U+202E>" in text and "\u202e" not in text
