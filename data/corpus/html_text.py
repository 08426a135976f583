"""Paragraphs of running text from HTML documentation pages.

Text inside block elements (p, li, dd, dt, headings, blockquote, table cells)
becomes one paragraph each. Preformatted blocks, scripts, styles and the
navigation furniture of Sphinx / DocBook pages (sidebars, headers, footers,
"permalink" anchors) are skipped.
"""

import html.parser

_BLOCKS = frozenset("p li dd dt h1 h2 h3 h4 h5 h6 blockquote td th caption figcaption div section article".split())
_SKIP = frozenset("pre script style nav head title select textarea math svg".split())
_SKIP_CLASSES = frozenset(
    "sphinxsidebar related footer header navheader navfooter toc headerlink "
    "highlight literal-block rst-footer-buttons breadcrumbs wy-nav-side searchbox".split())
_VOID = frozenset("br hr img input meta link area base col embed source track wbr".split())


class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs = []
        self._buffer = []
        self._stack = []  # (tag, skipping) of open elements
        self._skip_depth = 0

    def _flush(self):
        text = " ".join("".join(self._buffer).split())
        if text:
            self.paragraphs.append(text)
        self._buffer = []

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            if tag == "br" and not self._skip_depth:
                self._buffer.append(" ")
            return
        classes = set((dict(attrs).get("class") or "").split())
        skip = tag in _SKIP or bool(classes & _SKIP_CLASSES)
        if tag in _BLOCKS and not self._skip_depth:
            self._flush()
        self._stack.append((tag, skip))
        if skip:
            self._skip_depth += 1

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        # Close up to the matching tag (HTML in the wild leaves some unclosed).
        if not any(t == tag for t, _ in self._stack):
            return
        while self._stack:
            open_tag, skip = self._stack.pop()
            if skip:
                self._skip_depth -= 1
            if open_tag == tag:
                break
        if tag in _BLOCKS and not self._skip_depth:
            self._flush()

    def handle_data(self, data):
        if not self._skip_depth:
            self._buffer.append(data)

    def close(self):
        super().close()
        self._flush()


def paragraphs_from_html(markup):
    collector = _Collector()
    collector.feed(markup)
    collector.close()
    return collector.paragraphs
