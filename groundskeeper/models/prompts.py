"""The prompt texts (`prompts/NAME`) the models are given: from the installed package, or
from the repository in an editable install. It owns finding them, not what they say.
"""

from __future__ import annotations

from pathlib import Path


def load_prompt(name: str) -> str:
    """`prompts/NAME`, from the installed package or (editable install) the repo."""
    import importlib.resources  # ~10 ms (tempfile, shutil, zipfile): only when a prompt is read

    try:
        resource = importlib.resources.files("groundskeeper") / "prompts" / name
        return resource.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        repo_copy = Path(__file__).resolve().parents[2] / "prompts" / name
        return repo_copy.read_text(encoding="utf-8")
