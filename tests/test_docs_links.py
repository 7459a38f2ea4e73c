"""The README starts the reader and the rest lives in docs/ (issue 30): the README stays under 150 lines, every
page of docs/ is one click from it, and every relative link of the README and of docs/*.md reaches a file and,
with ``#anchor``, a heading of that file (GitHub's slugs). Every runnable bench script is listed in
docs/benchmarks.md (read as text: no test imports bench)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"#{1,6} +(.*)", line)
        if m:
            s = slug(m.group(1))
            out.add(f"{s}-{seen[s]}" if s in seen else s)
            seen[s] = seen.get(s, 0) + 1
    return out


def broken_links(pages: list[Path]) -> list[str]:
    bad = []
    for page in pages:
        name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{name}: {target} (no such heading in {dest.name})")
    return bad


def test_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_every_docs_page_is_one_click_from_the_readme() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(README.read_text(encoding="utf-8"))}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_every_relative_link_and_anchor_resolves() -> None:
    bad = broken_links(PAGES)
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_every_bench_script_is_listed_in_benchmarks_md() -> None:
    """In the list of entry points at the top (a script named only in a section further down is not listed)."""
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    start = text.index("**Entry points, one per kind of measurement**")
    listed = text[start:text.index("\n## ", start)]
    scripts = [p.stem for p in sorted((ROOT / "bench").glob("*.py")) if "__main__" in p.read_text(encoding="utf-8")]
    assert scripts
    missing = [s for s in scripts if f"python -m bench.{s}`" not in listed]
    assert not missing, f"bench scripts not listed in docs/benchmarks.md: {missing}"


def test_the_link_check_sees_a_broken_anchor_and_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Using it\n## The `ask --json` schema\n```\n# not a heading\n```\n",
                                   encoding="utf-8")
    assert anchors(tmp_path / "a.md") == {"using-it", "the-ask---json-schema"}
    (tmp_path / "b.md").write_text("[ok](a.md#using-it) [x](a.md#not-a-heading) [y](c.md) [w](https://x.org/#q)\n",
                                   encoding="utf-8")
    assert [b.split(": ", 1)[1] for b in broken_links([tmp_path / "b.md"])] == [
        "a.md#not-a-heading (no such heading in a.md)", "c.md (no such file)"]
