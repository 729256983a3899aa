#!/usr/bin/env python3
"""man.py — the scdoc sources of the manual pages, made from the texts the
project already has, so that no page says other than they do:

  man.py help FSBROKER VERSION    fsbroker(1) from the binary's own help
                                  texts: `fsbroker --help`, `fsbroker help
                                  COMMAND [VERB]` for every command and verb
                                  it lists, `fsbroker help environment`
  man.py pack DOC VERSION         fsbroker-pack(5) from docs/rule-packs.md
  man.py ascii <ROFF >ROFF        scdoc's output with every non-ASCII
                                  character as its roff name

The scdoc source goes to stdout; `make man` runs scdoc on it. The help texts
have a fixed layout (tests/cli/help.sh enforces it): `usage:` lines, a
description, `NAME:` lists of two-space-indented entries, then `exit:`,
`environment:` and `docs:` lines. That layout is what makes the conversion
mechanical; a text that breaks it fails here, not in the page.
"""
import re
import subprocess
import sys

TRAILERS = ("exit", "environment", "docs")
TRAILER_TITLES = {"exit": "Exit status", "environment": "Environment", "docs": "See also"}


def esc(text):
    """Text for an scdoc paragraph: its markup characters literal, `code`
    in bold."""
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")
    return re.sub(r"`([^`]+)`", r"*\1*", text)


def term(words, first_word_only):
    """An entry's term: options and names in bold, their values underlined."""
    out = []
    for i, w in enumerate(words.split()):
        comma = "," if w.endswith(",") else ""
        w = w.rstrip(",")
        if i == 0 or w.startswith("-"):
            out.append("*" + esc(w) + "*" + comma)
        else:
            out.append("_" + esc(w) + "_" + comma)
    return " ".join(out)


def run(fsb, *args):
    r = subprocess.run([fsb, *args], capture_output=True, text=True)
    if r.returncode != 0 or r.stderr:
        sys.exit("man.py: %s %s: status %d: %s" % (fsb, " ".join(args), r.returncode, r.stderr))
    return r.stdout


def parse_help(text):
    """A help text as (usage lines, paragraphs, [(list title, entries)],
    {trailer: text}), in order; paragraphs after a list are kept with it."""
    lines = text.rstrip("\n").split("\n")
    usage, blocks, trailers = [], [], {}
    i = 0
    if not lines[0].startswith("usage: "):
        sys.exit("man.py: a help text not starting with usage: %r" % lines[0])
    while i < len(lines) and lines[i].strip():
        usage.append(lines[i][7:])
        i += 1
    para = []
    cur = None  # the list being read: [title, [(term, desc)]]
    key = None  # the trailer being read

    def flush():
        if para:
            blocks.append(("para", " ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        i += 1
        m = re.match(r"^(exit|environment|docs): (.*)$", line)
        if m:
            flush()
            cur = None
            key = m.group(1)
            trailers[key] = m.group(2)
            continue
        if key is not None and line.startswith("  "):
            trailers[key] += " " + line.strip()
            continue
        if not line.strip():
            flush()
            cur = None
            continue
        if re.match(r"^[a-z][a-z ]*:$", line):
            flush()
            cur = [line[:-1], []]
            blocks.append(("list", cur))
            continue
        if cur is not None and re.match(r"^  \S", line):
            body = line[2:]
            if cur[0] in ("commands", "verbs", "variables"):
                t, _, d = body.partition(" ")
            else:
                parts = re.split(r"\s{2,}", body, maxsplit=1)
                t, d = parts[0], parts[1] if len(parts) > 1 else ""
            cur[1].append([t, d.strip()])
            continue
        if cur is not None and line.startswith("    "):
            cur[1][-1][1] = (cur[1][-1][1] + " " + line.strip()).strip()
            continue
        para.append(line.strip())
    flush()
    return usage, blocks, trailers


def emit_blocks(out, blocks, level):
    for kind, b in blocks:
        if kind == "para":
            out.append(esc(b))
            out.append("")
            continue
        title, entries = b
        out.append("%s %s" % ("#" * level, title[0].upper() + title[1:]))
        out.append("")
        for t, d in entries:
            out.append(term(t, title in ("commands", "verbs", "variables")))
            out.append("\t" + esc(d))
            out.append("")


def emit_command(out, fsb, words):
    usage, blocks, trailers = parse_help(run(fsb, "help", *words))
    out.append("# FSBROKER %s" % " ".join(words).upper())
    out.append("")
    out.append("```")
    out.extend(usage)
    out.append("```")
    out.append("")
    emit_blocks(out, blocks, 2)
    for k in TRAILERS:
        if k in trailers:
            out.append("## " + TRAILER_TITLES[k])
            out.append("")
            out.append(esc(trailers[k]))
            out.append("")


def page_fsbroker(fsb, version):
    out = ['fsbroker(1) "fsbroker %s" "fsbroker manual"' % version, ""]
    usage, blocks, trailers = parse_help(run(fsb, "--help"))
    paras = [b for k, b in blocks if k == "para"]
    lists = dict((b[0], b[1]) for k, b in blocks if k == "list")
    commands = [t for t, _ in lists["commands"]]
    out += ["# NAME", "", "fsbroker - " + esc(paras[0][0].lower() + paras[0][1:].rstrip(".")
                                              .split(". ")[0]), ""]
    out += ["# SYNOPSIS", "", "```"] + usage + ["```", ""]
    out += ["# DESCRIPTION", ""]
    for p in paras:
        out += [esc(p), ""]
    out += ["Each command has a section of its own below, the same text "
            "*fsbroker help* _COMMAND_ [_VERB_] prints.", ""]
    emit_blocks(out, [("list", ["commands", lists["commands"]]),
                      ("list", ["options", lists["options"]])], 2)
    for c in commands:
        emit_command(out, fsb, [c])
        if c in ("backup", "audit"):
            verbs = parse_help(run(fsb, "help", c))[1]
            for k, b in verbs:
                if k == "list" and b[0] == "verbs":
                    for v, _ in b[1]:
                        emit_command(out, fsb, [c, v])
    _, env_blocks, _ = parse_help(run(fsb, "help", "environment"))
    out += ["# ENVIRONMENT", ""]
    for k, b in env_blocks:
        if k == "para":
            out += [esc(b), ""]
        else:
            for t, d in b[1]:
                out += [term(t, True), "\t" + esc(d), ""]
    out += ["# EXIT STATUS", "", esc(trailers["exit"]), ""]
    out += ["# FILES", "",
            "_PREFIX_/libexec/fsbroker/fsbroker-init",
            "\tthe first process of every sandbox; found beside the binary "
            "(the build tree) or in ../libexec/fsbroker/ beside bin/", "",
            "_PREFIX_/libexec/fsbroker/clients/",
            "\tthe patched zsh, the brokered toybox and its shims (bin/), "
            "when they were built", "",
            "_PREFIX_/share/fsbroker/lua/",
            "\tthe policy engine (policy/) and the rule packs (rules/); "
            "*FSBROKER\\_LUA\\_DIR* names another", "",
            "_$XDG\\_STATE\\_HOME_/fsbroker/",
            "\tthe state dir: backups, audit logs and approvals, one session "
            "per workspace", "",
            "_PREFIX_/share/doc/fsbroker/",
            "\tREADME.md and docs/, the pages each command's See also names", ""]
    out += ["# SEE ALSO", "", "*fsbroker-pack*(5), *bwrap*(1), *zsh*(1), "
            "and the documentation under _PREFIX_/share/doc/fsbroker/: " +
            esc(trailers["docs"]), ""]
    return "\n".join(out)


def inline_md(text):
    """Markdown inline markup as scdoc: links to their text (and the page
    they lead to, when it is another one), `code` and **strong** in bold."""
    def link(m):
        label, target = m.group(1), m.group(2)
        if target.startswith("#"):
            return label
        page = target.split("#")[0]
        return "%s (%s)" % (label, page if "/" in page or page.startswith("http")
                            else "docs/" + page)
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", link, text)
    parts = re.split(r"(`[^`]+`|\*\*[^*]+\*\*)", text)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) > 1:
            out.append("*" + esc(p[1:-1]) + "*")
        elif p.startswith("**") and p.endswith("**") and len(p) > 4:
            out.append("*" + esc(p[2:-2].replace("`", "")) + "*")
        else:
            out.append(esc(p))
    return "".join(out)


def cells(row):
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|"):
        row = row[:-1]
    # A `|` inside code (`a \| b`) is not a column.
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)]


def page_pack(doc, version):
    src = open(doc, encoding="utf-8").read().split("\n")
    out = ['fsbroker-pack(5) "fsbroker %s" "fsbroker manual"' % version, "",
           "# NAME", "", "fsbroker-pack - the rule-pack format of fsbroker", "",
           "# SYNOPSIS", "", "```", "-- my-pack.lua", "return {",
           "  name = \"my-pack\",", "  include = { \"credentials\" },",
           "  fsProfile = { read = { \"**\" }, modify = { \"${workspace}/**\" } },",
           "}", "```", "", "*fsbroker check --rules* _my-pack.lua_ "
           "*--op* _OP_ _PATH_...", "", "# DESCRIPTION", ""]
    i = 0
    para = []

    def flush():
        if para:
            out.append(inline_md(" ".join(para)))
            out.append("")
            para.clear()

    while i < len(src):
        line = src[i]
        i += 1
        if i == 1 and line.startswith("# "):
            continue
        if line.startswith("```"):
            flush()
            out.append("```")
            while i < len(src) and not src[i].startswith("```"):
                out.append(src[i])
                i += 1
            i += 1
            out.append("```")
            out.append("")
            continue
        m = re.match(r"^(#{2,4}) (.*)$", line)
        if m:
            flush()
            level = 1 if len(m.group(1)) == 2 else 2
            title = re.sub(r"`([^`]+)`", r"\1", m.group(2))
            out.append("%s %s" % ("#" * level, esc(title.upper() if level == 1 else title)))
            out.append("")
            continue
        if line.startswith("|"):
            flush()
            head = cells(line)
            i += 1  # the |---| line
            while i < len(src) and src[i].startswith("|"):
                row = cells(src[i])
                i += 1
                out.append(inline_md(row[0]))
                body = ["_%s_: %s" % (esc(h), inline_md(c))
                        for h, c in zip(head[1:], row[1:])]
                out.append("\t" + "; ".join(body))
                out.append("")
            continue
        m = re.match(r"^\s*(- |\d+\. )(.*)$", line)
        if m and not para:
            item = [m.group(2)]
            while (i < len(src) and src[i].startswith("  ") and
                   not re.match(r"^\s*(- |\d+\. )", src[i])):
                item.append(src[i].strip())
                i += 1
            out.append("%s %s" % ("-" if m.group(1) == "- " else ".", inline_md(" ".join(item))))
            if i >= len(src) or not re.match(r"^\s*(- |\d+\. )", src[i]):
                out.append("")
            continue
        if not line.strip():
            flush()
            continue
        if line.startswith("Contents:"):
            while i < len(src) and src[i].strip():
                i += 1
            continue
        para.append(line.strip())
    flush()
    out += ["# SEE ALSO", "", "*fsbroker*(1); this page is docs/rule-packs.md, "
            "installed under _PREFIX_/share/doc/fsbroker/docs/.", ""]
    return "\n".join(out)


def roff_ascii():
    """scdoc passes UTF-8 through; groff without preconv warns on it. Each
    other character becomes its roff name, \\[uXXXX]."""
    text = sys.stdin.read()
    sys.stdout.write("".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text))


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "ascii":
        roff_ascii()
        return
    if len(sys.argv) != 4 or sys.argv[1] not in ("help", "pack"):
        sys.exit("usage: man.py help FSBROKER VERSION | man.py pack DOC VERSION | "
                 "man.py ascii <ROFF")
    page = page_fsbroker if sys.argv[1] == "help" else page_pack
    sys.stdout.write(page(sys.argv[2], sys.argv[3]))


main()
