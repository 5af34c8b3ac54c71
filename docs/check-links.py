#!/usr/bin/python3
"""Checks the built book's internal links and anchors, and README.md's links
into the repository and the book: every relative href (and image) must name a
file that exists, and every #fragment an id on the page it names. External
links (a scheme: https:, mailto:) are not fetched. Exits 1 with one line per
broken link.

  check-links.py BOOK_DIR [MARKDOWN...]   the built book (mdbook build's
                                          output) and Markdown files outside it
                                          (README.md) whose links to
                                          docs/src/*.md are checked against the
                                          built pages' ids
  check-links.py --self-test              proves on a small made-up book that a
                                          missing page and a missing anchor are
                                          both reported, and a good link is not

Owns the checking only; scripts/book.sh builds the book and runs it.
"""
import html.parser
import os
import re
import sys
import tempfile
from urllib.parse import unquote, urlsplit

# Pages mdBook makes from all the others (their links are rewritten to the
# one page) or for a server (absolute to the site's root): not the book's own.
SKIPPED = {"print.html", "404.html", "toc.html"}


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img" and a.get("src"):
            self.links.append(a["src"])


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def external(href):
    return bool(urlsplit(href).scheme) or href.startswith("//")


def check_book(book):
    """Broken links of the built book, as 'page: href: why' lines; and the ids per page."""
    pages = {}
    for root, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(root, name)
                pages[os.path.relpath(path, book)] = parse(path)
    broken = []
    for rel, page in sorted(pages.items()):
        if os.path.basename(rel) in SKIPPED:
            continue
        for href in dict.fromkeys(page.links):
            if external(href):
                continue
            why = resolve(book, pages, rel, href)
            if why:
                broken.append(f"{rel}: {href}: {why}")
    return broken, pages


def resolve(book, pages, rel, href):
    """Why href (on page rel) does not resolve, or None."""
    parts = urlsplit(href)
    target = rel if parts.path == "" else os.path.normpath(
        os.path.join(os.path.dirname(rel), unquote(parts.path)))
    if target.startswith(".."):
        return "outside the book"
    full = os.path.join(book, target)
    if os.path.isdir(full):
        target = os.path.join(target, "index.html")
        full = os.path.join(book, target)
    if not os.path.exists(full):
        return "no such page or file"
    if parts.fragment:
        page = pages.get(target)
        if page is None:
            return "an anchor on something that is not a page"
        if unquote(parts.fragment) not in page.ids:
            return f"no #{parts.fragment} on {target}"
    return None


MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MD_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def check_markdown(path, book, pages):
    """Broken relative links of a Markdown file outside the book."""
    text = MD_CODE.sub("", open(path, encoding="utf-8").read())
    base = os.path.dirname(os.path.abspath(path))
    broken = []
    for href in MD_LINK.findall(text):
        if external(href) or href.startswith("#"):
            continue
        parts = urlsplit(href)
        target = os.path.normpath(os.path.join(base, unquote(parts.path)))
        if not os.path.exists(target):
            broken.append(f"{path}: {href}: no such file")
            continue
        if parts.fragment:
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src")
            inside = os.path.relpath(target, src)
            if inside.startswith("..") or not inside.endswith(".md"):
                broken.append(f"{path}: {href}: an anchor outside the book's pages is not checked; link the page")
                continue
            html_page = inside[:-3] + ".html"
            page = pages.get(html_page)
            if page is None:
                broken.append(f"{path}: {href}: {inside} is not a page of the book (not in SUMMARY.md?)")
            elif unquote(parts.fragment) not in page.ids:
                broken.append(f"{path}: {href}: no #{parts.fragment} on {inside}")
    return broken


def self_test():
    with tempfile.TemporaryDirectory() as book:
        def write(name, body):
            os.makedirs(os.path.dirname(os.path.join(book, name)) or book, exist_ok=True)
            with open(os.path.join(book, name), "w", encoding="utf-8") as f:
                f.write(body)
        write("a.html", '<h2 id="here">x</h2><a href="b.html#there">ok</a>'
              '<a href="#here">ok</a><a href="https://example.net/#x">ext</a>'
              '<a href="gone.html">1</a><a href="b.html#nowhere">2</a><img src="img/x.png">')
        write("sub/b.html", "")
        write("b.html", '<h2 id="there">y</h2><a href="sub/b.html">ok</a><a href="../up.html">3</a>')
        broken, _ = check_book(book)
        want = ["a.html: gone.html: no such page or file",
                "a.html: b.html#nowhere: no #nowhere on b.html",
                "a.html: img/x.png: no such page or file",
                "b.html: ../up.html: outside the book"]
        if sorted(broken) != sorted(want):
            print("self-test failed:\n  got " + "\n      ".join(broken), file=sys.stderr)
            return 1
    print("check-links: self-test ok (a missing page, a missing anchor, a missing image "
          "and a link out of the book reported; good ones not)")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2 or not os.path.isdir(argv[1]):
        print(__doc__, file=sys.stderr)
        return 2
    book = argv[1]
    broken, pages = check_book(book)
    for md in argv[2:]:
        broken += check_markdown(md, book, pages)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    checked = sum(len(p.links) for r, p in pages.items() if os.path.basename(r) not in SKIPPED)
    if broken:
        print(f"{len(broken)} broken links", file=sys.stderr)
        return 1
    print(f"check-links: {len(pages)} pages, {checked} links and images, "
          f"{len(argv) - 2} Markdown file(s) outside the book: none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
