"""Static CSS and the one page script of the app (trusted, ours: no data goes into them)."""

from __future__ import annotations

LATEX_DELIMITERS: list[dict[str, str | bool]] = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "$", "right": "$", "display": False},
]

# Clicking an inline [n] opens and scrolls to its paper card. The card may appear a moment later
# (clicking an older answer switches the sources panel to that turn first), so wait for it briefly.
PAGE_JS = r"""
() => {
  document.addEventListener('click', (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest('a.pc-cite') : null;
    if (!a) return;
    const id = (a.getAttribute('href') || '').replace(/^#/, '');
    if (!/^pc-card-\d+-\d+$/.test(id)) return;
    ev.preventDefault();
    let tries = 0;
    const open = () => {
      const el = document.getElementById(id);
      if (!el) { if (tries++ < 30) setTimeout(open, 100); return; }
      el.open = true;
      el.scrollIntoView({behavior: 'smooth', block: 'nearest'});
      el.classList.add('pc-flash');
      setTimeout(() => el.classList.remove('pc-flash'), 1600);
    };
    open();
  }, true);
  // A card's "Pin" / "Exclude" link (ui.why_view.steer_links) sends "/pin ID" or "/exclude ID" as the next message.
  document.addEventListener('click', (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest('a.pc-steer-link') : null;
    const m = a ? (a.getAttribute('href') || '').match(/^#pc-(pin|exclude)-(.+)$/) : null;
    const box = document.querySelector('#pc-question textarea');
    const ask = document.querySelector('#pc-ask');
    if (!m || !box || !ask) return;
    ev.preventDefault();
    box.value = '/' + m[1] + ' ' + decodeURIComponent(m[2]);
    box.dispatchEvent(new Event('input', {bubbles: true}));
    setTimeout(() => ask.click(), 100);
  }, true);
  // Gradio's table marks each checkbox cell role=button around an unlabelled checkbox (axe: nested-interactive,
  // label) and its "static column" icons carry aria-label without a role: give the boxes their row's title as
  // a name and the icons role=img, whenever the table renders.
  const fix = () => {
    for (const cell of document.querySelectorAll('#pc-library .bool-cell[role=button], '
                                                 + '#pc-library .select-all-checkbox[role=button]'))
      cell.removeAttribute('role');
    for (const box of document.querySelectorAll('#pc-library input[type=checkbox]')) {
      const cell = box.closest('[data-testid^="cell-"]');
      const row = cell ? cell.getAttribute('data-testid').split('-')[1] : null;
      const title = row === null ? null : document.querySelector(`#pc-library [data-testid="cell-${row}-1"]`);
      const name = title ? 'Select: ' + title.innerText.trim() : 'Select all rows';
      if (box.getAttribute('aria-label') !== name) box.setAttribute('aria-label', name);
    }
    for (const icon of document.querySelectorAll('#pc-library th [aria-label]:not([role]):not(input):not(button)'))
      icon.setAttribute('role', 'img');
  };
  // The conversations sidebar's toggle says whether the sidebar is open (aria-expanded) and what it opens
  // (aria-controls): Gradio's button has neither. Kept in step with the sidebar's "open" class.
  let watched = null;
  const sidebar = () => {
    const side = document.getElementById('pc-sidebar');
    const toggle = side ? side.querySelector(':scope > button.toggle-button') : null;
    const content = side ? side.querySelector(':scope > .sidebar-content') : null;
    if (!toggle) return;
    if (content && !content.id) content.id = 'pc-sidebar-content';
    if (content) toggle.setAttribute('aria-controls', content.id);
    const open = String(side.classList.contains('open'));
    if (toggle.getAttribute('aria-expanded') !== open) toggle.setAttribute('aria-expanded', open);
    if (watched !== side) {
      watched = side;
      new MutationObserver(sidebar).observe(side, {attributes: true, attributeFilter: ['class']});
    }
  };
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; fix(); sidebar(); });
  }).observe(document.body, {childList: true, subtree: true});
  fix();
  sidebar();
}
"""

CSS = """
.gradio-container { max-width: 1500px !important; margin: 0 auto; }
#pc-header h1 { margin-bottom: 0; font-size: 1.6em; }
#pc-header p { margin-top: 2px; opacity: .75; }
#pc-chat .md.chatbot { opacity: 1; }  /* Gradio fades messages to .8: the text then fails AA contrast */
#pc-conv-heading h2 { font-size: 1.17em; }
#pc-sidebar:not(.open) > .sidebar-content { visibility: hidden; }  /* closed: off-screen, so out of the Tab order */
.pc-cite { text-decoration: none !important; font-weight: 600; color: var(--color-accent) !important;
  padding: 0 1px; white-space: nowrap; }
.pc-cite:hover { text-decoration: underline !important; }
.pc-cite.pc-contradicted-cite { color: #b91c1c !important; border-bottom: 1px dashed #b91c1c; }
.pc-filters { display: inline-block; font-size: .8em; padding: 1px 10px; border-radius: 999px;
  background: var(--background-fill-secondary); border: 1px solid var(--border-color-primary); }
.pc-note { display: block; font-size: .82em; color: #92400e; }
.pc-contradicted { display: block; margin: 6px 0; padding: 8px 12px; border-radius: 8px; border-left: 4px solid #dc2626;
  background: #fef2f2; color: #7f1d1d; }
.pc-side { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 4px; }
.pc-side > span { display: block; }
.pc-side em { display: block; font-size: .8em; font-style: normal; font-weight: 600; opacity: .75; }
.pc-why-not { display: block; font-size: .8em; opacity: .8; margin-top: 4px; }
.pc-absent { display: block; font-size: .8em; color: var(--body-text-color-subdued); }
.pc-meta { display: block; font-size: .75em; color: var(--body-text-color-subdued); }
.pc-error { color: #b91c1c; font-weight: 500; }
.pc-cursor { opacity: .5; }
#pc-sources { padding-right: 4px; }
.pc-sources-head { font-size: .85em; opacity: .75; margin: 0 0 6px 0; }
.pc-empty { opacity: .65; font-size: .9em; padding: 18px 4px; }
.pc-card { border: 1px solid var(--border-color-primary); border-radius: 10px; margin: 0 0 8px 0;
  background: var(--background-fill-primary); transition: box-shadow .3s; }
.pc-card[open] { box-shadow: 0 1px 6px rgba(0,0,0,.08); }
.pc-card.pc-card-contradicted { border-color: #dc2626; }
.pc-stmt { font-size: .9em; }
.pc-stmt-contradicted { color: #b91c1c; }
.pc-stmt-absent { color: var(--body-text-color-subdued); }
.pc-card > summary { cursor: pointer; list-style: none; display: flex; gap: 10px; padding: 10px 12px;
  align-items: flex-start; }
.pc-card > summary::-webkit-details-marker { display: none; }
.pc-n { flex: none; width: 1.75em; height: 1.75em; border-radius: 50%; background: var(--color-accent);
  color: #fff; display: inline-flex; align-items: center; justify-content: center; font-weight: 700;
  font-size: .8em; margin-top: 1px; }
.pc-head { display: flex; flex-direction: column; gap: 2px; min-width: 0; }
.pc-title { font-weight: 600; line-height: 1.3; }
.pc-byline { font-size: .82em; opacity: .7; }
.pc-flag { font-size: .72em; color: #991b1b; background: #fee2e2; border-radius: 4px; padding: 0 6px;
  width: fit-content; }
.pc-body { padding: 0 14px 10px 46px; font-size: .9em; }
.pc-body p { margin: 6px 0; }
.pc-chip { display: inline-block; font-size: .75em; border-radius: 999px; padding: 0 8px; margin: 0 4px 2px 0;
  background: var(--background-fill-secondary); border: 1px solid var(--border-color-primary); }
.pc-why { background: var(--background-fill-secondary); padding: 6px 10px; border-radius: 6px; }
.pc-authors { font-size: .85em; opacity: .75; }
.pc-abstract { line-height: 1.55; }
.pc-passage { line-height: 1.55; border-left: 3px solid currentColor; padding-left: .6em; }
.pc-page { font-weight: 600; font-size: .85em; opacity: .8; }
.pc-coverage { display: block; font-size: .75em; color: var(--body-text-color-subdued); }
mark.pc-evidence { background: #fde68a; color: #1f2937; padding: 0 2px; border-radius: 3px; }
.pc-links { font-size: .82em; }
.pc-id { font-size: .9em; opacity: .7; }
.pc-flash { box-shadow: 0 0 0 3px var(--color-accent-soft) !important; }
#pc-stats { font-size: .95em; }
#pc-library td, #pc-library td *, #pc-library [role=gridcell], #pc-library [role=gridcell] * {
  font-family: var(--font) !important; }
#pc-library input[type=checkbox] { border: 1.5px solid var(--body-text-color-subdued) !important; opacity: 1 !important;
  cursor: pointer; }
.pc-scope { display: inline-block; font-size: .85em; padding: 2px 12px; border-radius: 999px;
  background: var(--background-fill-secondary); border: 1px solid var(--color-accent); }
#pc-coll-status { font-size: .9em; }
#pc-clear-filters { align-self: center; }
#pc-sources-title h3 { margin: 4px 0 6px 0; }
#pc-lib-search { align-self: flex-end; margin-bottom: 6px; }
"""
