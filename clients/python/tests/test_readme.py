"""The quick starts run as written: every ```python block of the repository README's "Python
client" section, and of clients/python/README.md, in order, against the test server."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import List

import pytest

from .conftest import REPO_ROOT, Server


def _python_blocks(markdown: str) -> List[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def _section(markdown: str, heading: str) -> str:
    start = markdown.index(f"\n{heading}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end != -1 else len(markdown)]


def _run(blocks: List[str], server: Server, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("VSS_URL", server.url)
    monkeypatch.setenv("VSS_API_KEY", server.admin_key)
    out = io.StringIO()
    scope: dict = {"__name__": "__readme__"}
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, "README", "exec"), scope)
    for name in ("client", "store"):
        closer = getattr(scope.get(name), "close", None)
        if closer:
            closer()
    return out.getvalue()


def test_repository_readme_quick_start(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _python_blocks(_section((REPO_ROOT / "README.md").read_text(), "## Python client"))
    assert len(blocks) == 1
    printed = _run(blocks, server, monkeypatch)
    assert printed.startswith("cat ") and printed.rstrip().endswith("A cat is lying on a sofa.")


def test_package_readme_examples(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = Path(__file__).resolve().parents[1] / "README.md"
    blocks = _python_blocks(readme.read_text())
    assert len(blocks) >= 3
    printed = _run(blocks, server, monkeypatch)
    lines = printed.splitlines()
    # What the examples' comments say they print.
    for expected in ("['dog', 'bread']", "A cat is lying on a sofa.", "1 2", "404 vector_not_found", "['/body/final_top_k']", "a1 1", "paris"):
        assert expected in lines
