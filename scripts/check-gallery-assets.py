#!/usr/bin/env python3
"""Lints the pages couchlite serves from files in its binary, the photo gallery's page and images
(Sources/PhotoDrop/Gallery/Assets/) and the database console's (Sources/CouchServer/Console/Assets/), as what
they are.

Every asset must be UTF-8 and end with a newline. Each HTML file must start with `<!doctype html>`
and be well-formed: every element that is not void is closed explicitly, in order, no id is used
twice, no attribute is given twice. Each SVG file must parse as XML with an <svg> root in the SVG
namespace. The CSS must balance its braces (outside comments and strings). The scripts are checked by
`node --check` in scripts/test.sh. Prints nothing and exits 0 when all pass; otherwise names each
problem (file:line) on stderr and exits 1.
"""
import html.parser
import pathlib
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
ASSET_DIRS = [ROOT / "Sources/PhotoDrop/Gallery/Assets", ROOT / "Sources/CouchServer/Console/Assets"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
SVG_NS = "{http://www.w3.org/2000/svg}"

problems = []


def problem(path, line, message):
    problems.append(f"{path.relative_to(ROOT)}:{line}: {message}")


class Checker(html.parser.HTMLParser):
    def __init__(self, path):
        super().__init__(convert_charrefs=True)
        self.path, self.stack, self.ids = path, [], {}

    def handle_starttag(self, tag, attrs):
        line = self.getpos()[0]
        names = [name for name, _ in attrs]
        for name in sorted({n for n in names if names.count(n) > 1}):
            problem(self.path, line, f"<{tag}> has attribute {name!r} twice")
        for name, value in attrs:
            if name == "id":
                if value in self.ids:
                    problem(self.path, line, f"id {value!r} already used on line {self.ids[value]}")
                self.ids.setdefault(value, line)
        if tag not in VOID:
            self.stack.append((tag, line))

    def handle_startendtag(self, tag, attrs):
        if tag not in VOID:
            problem(self.path, self.getpos()[0], f"<{tag}/> is not a void element: close it with </{tag}>")
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        line = self.getpos()[0]
        if tag in VOID:
            problem(self.path, line, f"</{tag}> closes a void element")
        elif not self.stack:
            problem(self.path, line, f"</{tag}> closes nothing")
        elif self.stack[-1][0] != tag:
            open_tag, open_line = self.stack[-1]
            problem(self.path, line, f"</{tag}> while <{open_tag}> (line {open_line}) is still open")
            if any(t == tag for t, _ in self.stack):  # resynchronise on the matching open tag
                while self.stack.pop()[0] != tag:
                    pass
        else:
            self.stack.pop()


def check_html(path, text):
    if not text.lower().startswith("<!doctype html>"):
        problem(path, 1, "does not start with <!doctype html>")
    checker = Checker(path)
    checker.feed(text)
    checker.close()
    for tag, line in checker.stack:
        problem(path, line, f"<{tag}> is never closed")


def check_svg(path, text):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        problem(path, error.position[0], f"not well-formed XML: {error}")
        return
    if root.tag != SVG_NS + "svg":
        problem(path, 1, f"root element is {root.tag}, not <svg xmlns=\"http://www.w3.org/2000/svg\">")


def check_css(path, text):
    depth, line, i, quote = 0, 1, 0, None
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                problem(path, line, "comment never closed")
                return
            line += text.count("\n", i, end)
            i = end + 1
        elif c in "'\"":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                problem(path, line, "} closes nothing")
                depth = 0
        i += 1
    if quote:
        problem(path, line, "string never closed")
    if depth:
        problem(path, line, f"{depth} block(s) never closed")


def main():
    paths = []
    for directory in ASSET_DIRS:
        found = sorted(directory.iterdir())
        if not found:
            problem(directory, 0, "no assets")
        paths += found
    for path in paths:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            problem(path, 0, f"not UTF-8: {error}")
            continue
        if not text.endswith("\n"):
            problem(path, text.count("\n") + 1, "no newline at end of file")
        if path.suffix == ".html":
            check_html(path, text)
        elif path.suffix == ".svg":
            check_svg(path, text)
        elif path.suffix == ".css":
            check_css(path, text)
        elif path.suffix != ".js":  # app.js: node --check, in scripts/test.sh
            problem(path, 0, "unknown kind of asset: teach scripts/check-gallery-assets.py to check it")
    for line in problems:
        print(f"check-gallery-assets: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
