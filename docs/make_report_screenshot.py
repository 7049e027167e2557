"""Regenerate docs/report.png: the report of `make demo`'s run as a reviewer first sees it,
rendered by Debian's chromium (`make browsers`) through Playwright with scripts off.

Usage: .venv/bin/python docs/make_report_screenshot.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
GOAL = "Write the release notes for 0.1.0 and count the changes"


def main() -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("no chromium: run `make browsers` first")
    with tempfile.TemporaryDirectory(prefix="gk-demo-") as tmp:
        base = Path(tmp)
        env = {**os.environ, "GROUNDSKEEPER_HOME": str(base / "home")}
        gk = [sys.executable, "-m", "groundskeeper"]
        mission = f"scripted:{ROOT / 'examples' / 'demo' / 'mission.yaml'}"
        subprocess.run(
            [*gk, "run", GOAL, "--model", mission, "--dir", str(base / "work"), "--require-checks"],
            check=True, env=env, capture_output=True,
        )  # fmt: skip
        page_path = base / "report.html"
        subprocess.run(
            [*gk, "report", str(base / "work"), "-o", str(page_path)], check=True, env=env
        )
        args = ["--disable-gpu", "--disable-background-networking", "--no-first-run"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=args)
            context = browser.new_context(
                java_script_enabled=False, viewport={"width": 1280, "height": 1250}
            )
            page = context.new_page()
            page.goto(page_path.as_uri())
            page.screenshot(path=str(ROOT / "docs" / "report.png"))
            browser.close()
    print(ROOT / "docs" / "report.png")


if __name__ == "__main__":
    main()
