"""Every relative link in the README and docs/ resolves inside the repository, anchors included."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "bench").rglob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub gives a Markdown file (lower case, punctuation dropped, spaces to -)."""
    text = FENCE.sub("", path.read_text())
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(text):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    """The links of a Markdown file that point inside the repository (code blocks left out)."""
    text = FENCE.sub("", path.read_text())
    return [target for target in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def test_the_documents_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in DOCUMENTS}
    assert {"README.md", "docs/api.md", "docs/interface.md", "docs/operations.md"} <= names


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(document):
    broken = []
    for target in relative_links(document):
        file_part, _, anchor = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists() or ROOT not in linked.parents and linked != ROOT:
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(target)
    assert broken == []


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[fine](#title) [gone](missing.md) [bad anchor](#nowhere)\n"
                    "```\n[in code](ignored.md)\n```\n")
    assert relative_links(page) == ["#title", "missing.md", "#nowhere"]
    assert anchors(page) == {"title"}
