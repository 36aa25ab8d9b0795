#!/usr/bin/env python3
"""embed_page.py PAGE STYLE SCRIPT OUT — writes OUT, a C file defining
vrt_html_page_head and vrt_html_page_tail: the HTML report's page
(analyzer/report/html/page.html) with its style sheet and script put in
place of @STYLE@ and @SCRIPT@, cut at @DATA@, where `analyze --format html`
writes the report's JSON document. The three files stay plain HTML, CSS and
JavaScript that editors and linters read; the page users get is one
self-contained file.

A style sheet holding "</style" or a script holding "</script" or "<!--"
would end its element early (or change how the browser parses it), so they
are refused, as is any marker that is missing or repeated. The bytes become
C string literals as common/embed_rules.py writes them.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "common"))
from embed_rules import literal  # noqa: E402


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data:
        sys.exit(f"{path}: NUL byte")
    return data


def array(name, data):
    lines = data.splitlines(keepends=True) or [b""]
    body = "\n".join("        " + literal(line) for line in lines)
    return f"const char {name}[] =\n{body};\n"


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: embed_page.py PAGE STYLE SCRIPT OUT")
    page, style, script = (read(p) for p in sys.argv[1:4])
    if re.search(rb"</style", style, re.I):
        sys.exit(f"{sys.argv[2]}: holds </style")
    if re.search(rb"</script|<!--", script, re.I):
        sys.exit(f"{sys.argv[3]}: holds </script or <!--")
    for marker in (b"@STYLE@", b"@SCRIPT@", b"@DATA@"):
        if page.count(marker) != 1:
            sys.exit(f"{sys.argv[1]}: {marker.decode()} must appear once")
    page = page.replace(b"@STYLE@", style.rstrip(b"\n"))
    page = page.replace(b"@SCRIPT@", script.rstrip(b"\n"))
    head, tail = page.split(b"@DATA@")
    with open(sys.argv[4], "w") as f:
        f.write("/* Generated from analyzer/report/html/ by "
                "analyzer/report/html/embed_page.py: edit those files, "
                "not this. */\n#include \"report/report.h\"\n\n" +
                array("vrt_html_page_head", head) + "\n" +
                array("vrt_html_page_tail", tail))


if __name__ == "__main__":
    main()
