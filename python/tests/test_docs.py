"""The documentation: README.md, docs/*.md and docs/results/README.md.

* Every relative Markdown link and image must point at a file or folder that exists, and a link
  into a Markdown file with a ``#anchor`` must name one of that file's headings, slugged as
  GitHub slugs them. Links with a scheme (http:, https:, mailto:, ...) are not checked; links
  inside fenced code blocks and inline code spans are not links.
* The documents state what the software does and measures; they do not narrate how it came
  about: no work sessions, no runs numbered by ordinal. A result is named by its date, machine
  and commit.
"""
import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# An inline code span: a run of backticks up to the next run of the same length, not across a
# blank line (CommonMark lets a span run over line ends within a paragraph).
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
# [text](target) or ![alt](target); the text may hold one level of brackets; the target may be
# <...>, may hold balanced parentheses one level deep, and may end in a "title".
_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
    r"\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def _doc_files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "docs" / "results").glob("*.md"))]


# A run or work session numbered by ordinal (an ordinal word or "3rd" before "session"), or
# any mention of sessions at all.
_NARRATION = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"[a-z]+teenth|[a-z]+tieth|(twenty|thirty|forty|fifty)-[a-z]+|[0-9]+(st|nd|rd|th)) session"
    r"|\bsessions?\b", re.I)


def narration(path):
    """(line, text) of every line of the file at path that narrates work sessions."""
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if _NARRATION.search(line):
            yield i, line.strip()


def _blank_fences(text):
    """The text with every fenced code block's lines (fences included) emptied; line numbers
    stay where they were."""
    out, fence = [], None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append("")
                continue
            out.append(line)
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            out.append("")
    return "\n".join(out)


def _blank_code_spans(text):
    return _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def slug(heading):
    """GitHub's anchor for a heading's text: lower case; every character that is not a letter,
    digit, space, hyphen or underscore removed; each space a hyphen."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links: text
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor that the headings of the Markdown file at path define (a repeated heading
    gets -1, -2, ...)."""
    lines = _blank_fences(path.read_text(encoding="utf-8")).split("\n")
    headings = []
    for i, line in enumerate(lines):
        m = _ATX.match(line)
        if m and (m.group(2) is not None or line.strip() == m.group(1)):
            headings.append(m.group(2) or "")
        elif i > 0 and _SETEXT.match(line) and lines[i - 1].strip() and \
                not _ATX.match(lines[i - 1]):
            headings.append(lines[i - 1])  # setext: a paragraph line underlined with = or -
    seen, result = {}, set()
    for h in headings:
        base = slug(h)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def links(path):
    """(line, target) of every Markdown link and image outside code in the file at path."""
    text = _blank_code_spans(_blank_fences(path.read_text(encoding="utf-8")))
    for m in _LINK.finditer(text):
        target = m.group(1)
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]
        yield text.count("\n", 0, m.start()) + 1, target


def broken_links(files, root=ROOT):
    """A line 'file:line: (target): why' for each broken relative link in files (paths shown
    relative to root)."""
    problems, anchor_cache = [], {}
    for path in files:
        for line, target in links(path):
            where = f"{path.relative_to(root)}:{line}: ({target})"
            if not target:
                problems.append(f"{where}: empty link target")
                continue
            if _SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            dest = path if not file_part else (path.parent / unquote(file_part)).resolve()
            if not dest.exists():
                problems.append(f"{where}: no such file or folder")
                continue
            if anchor and dest.is_file() and dest.suffix.lower() == ".md":
                if dest not in anchor_cache:
                    anchor_cache[dest] = anchors(dest)
                if unquote(anchor) not in anchor_cache[dest]:
                    problems.append(f"{where}: no heading with the anchor #{unquote(anchor)} "
                                    f"in {dest.relative_to(root)}")
    return problems


def test_slug_follows_github():
    assert slug("1. Case study 1 (Figs. 9 and 10)") == "1-case-study-1-figs-9-and-10"
    assert slug("Case study 2 on the H100, 2026-11-23 (machine B): `--keep-awake` against "
                "the steal") == "case-study-2-on-the-h100-2026-11-23-machine-b---keep-awake-" \
                                "against-the-steal"
    assert slug("Wait strategies on the H100 at 10⁶ frames per configuration (2026-11-23)") == \
        "wait-strategies-on-the-h100-at-10⁶-frames-per-configuration-2026-11-23"
    assert slug("ε's wake-ups, and [a link](x.md) snake_case") == \
        "εs-wake-ups-and-a-link-snake_case"


def test_anchors_of_duplicate_headings_are_numbered(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# Title\n\n## Runs\n\n```\n## Not a heading\n```\n\n## Runs\n\nText\n\n---\n\n"
                   "Under\n===\n", encoding="utf-8")
    assert anchors(doc) == {"title", "runs", "runs-1", "under"}


def test_the_checker_finds_broken_links(tmp_path):
    (tmp_path / "b.md").write_text("# B\n\n## Here\n", encoding="utf-8")
    (tmp_path / "dir").mkdir()
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\n[ok](b.md#here) [ok](dir/) [ok](#a) [ok](https://x.invalid/y)\n"
                   "`[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n"
                   "[bad](missing.md) ![bad](b.md#there)\n[bad](#nowhere)\n", encoding="utf-8")
    problems = broken_links([doc], root=tmp_path)
    assert [p.split(":")[1] for p in problems] == ["9", "9", "10"], problems


def test_relative_links_in_the_docs_resolve():
    problems = broken_links(_doc_files())
    assert not problems, f"{len(problems)} broken link(s) in README.md and docs/*.md:\n" + \
        "\n".join(problems)


def test_the_narration_check_finds_sessions_and_ordinals(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nMeasured on the H100, 2026-11-25, code 8c6529e.\n"
                   "As found in the thirty-seventh " "session.\nThe 3rd " "session.\n"
                   "Session notes.\nThe second run of the day.\n", encoding="utf-8")
    assert [n for n, _ in narration(doc)] == [4, 5, 6]


def test_the_docs_do_not_narrate_sessions():
    hits = [f"{p.relative_to(ROOT)}:{n}: {line}" for p in _doc_files() for n, line in narration(p)]
    assert not hits, "the documents narrate work sessions; name a result by date, machine and " \
        "commit instead:\n" + "\n".join(hits)
