#!/usr/bin/env python3
"""embed_rules.py IN OUT — writes OUT, a C file whose
vrt_rules_builtin_text() returns the bytes of IN (common/builtin.rules),
so the rules file users read is, byte for byte, the one vramtrace and
libvramtrace.so parse, and builtin:LINE names a line of it.

The text becomes one string literal, a line per literal: printable ASCII
stays as it is (quotes, backslashes and question marks escaped: "??" could
start a trigraph in ISO C), any other byte becomes a three-digit octal
escape. A NUL byte is refused: the rules parser rejects
it anyway, and the C string would end there.
"""
import sys


def literal(line):
    out = []
    for b in line:
        c = chr(b)
        if c in '"\\?':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7f:
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: embed_rules.py IN OUT")
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        data = f.read()
    if b"\0" in data:
        sys.exit(f"{src}: NUL byte in the rules file")
    lines = data.splitlines(keepends=True) or [b""]
    body = "\n".join("        " + literal(l) for l in lines)
    with open(dst, "w") as f:
        f.write("/* Generated from common/builtin.rules by "
                "common/embed_rules.py: edit the rules file, not this. */\n"
                "#include \"rules.h\"\n\n"
                "static const char builtin_rules[] =\n"
                f"{body};\n\n"
                "const char *vrt_rules_builtin_text(void)\n"
                "{\n\treturn builtin_rules;\n}\n")


if __name__ == "__main__":
    main()
