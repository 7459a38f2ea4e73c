"""The chat's "Why these papers" block under an answer (rag.qa.why): a collapsed ``<details>`` with one line per
cited paper (the question's words it matches, its dense closeness, its scope) and one per close paper left out,
with the ``/pin N|ID`` and ``/exclude N|ID`` commands that steer the next question."""

from __future__ import annotations

from urllib.parse import quote

from rag.answer import Answer
from rag.qa.why import why_line
from ui.safe import inline


def why_html(answer: Answer) -> str:
    """The block, or "" when the answer has no reasons to show (a refusal with nothing retrieved, an old turn)."""
    if not answer.why and not answer.not_cited:
        return ""
    rows = [f"<li>[{w['n']}] {inline(w['title'] or w['paper_id'], 'html')}: {inline(why_line(w), 'html')}</li>"
            for w in answer.why]
    rows += [f"<li>not cited: {inline(w['title'] or w['paper_id'], 'html')} "
             f"(<code>{inline(w['paper_id'], 'html')}</code>): {inline(why_line(w), 'html')}</li>"
             for w in answer.not_cited]
    hint = ("<p>Type <code>/pin N</code> or <code>/pin ID</code> to make a paper count in the next answers, "
            "<code>/exclude N</code> or <code>/exclude ID</code> to keep it out; alone, each clears its list.</p>")
    return (f'<details class="pc-why-papers"><summary>Why these papers</summary><ul>{"".join(rows)}</ul>{hint}'
            "</details>")


def steer_links(paper_id: str) -> str:
    """A card's Pin and Exclude links: the page script (ui.assets) sends ``/pin ID`` or ``/exclude ID`` as the next
    chat message, which steers the questions that follow."""
    ref = quote(paper_id, safe="")
    return (f'<p class="pc-steer"><a class="pc-steer-link" href="#pc-pin-{ref}">Pin for the next questions</a> · '
            f'<a class="pc-steer-link" href="#pc-exclude-{ref}">Exclude from the next answers</a></p>')
