#!/usr/bin/env python3
"""tree.py — compare two directory trees the way a user judges an undo.

    tree.py diff A B [--what FIELDS] [--old-before NS] [--volatile GLOBS]

Walks A and B with lstat (never following a symlink) and prints one line per
difference ("<path>: <what>"), at most 40, then exits 1; exits 0 when the
trees match. FIELDS is a comma list of:

    paths    the set of paths (always compared)
    type     file type
    content  a regular file's bytes (SHA-256) and a symlink's target
    mode     permission bits, setuid/setgid/sticky included
    owner    uid and gid
    mtime    mtime in ns of everything but directories
    dirmtime mtime in ns of directories (the root's included)
    links    hard-link groups: paths that share an inode in A share one in B

With --old-before NS, an mtime is compared only where A's is older than NS
(a time the command kept, such as tar's or rsync's, not one it made now).
--volatile takes a comma list of fnmatch globs ('*' crosses '/') of paths
whose names, content or mtime hold the time, a hash or inode numbers of the
moment (git's index and reflogs, cargo's incremental state): only the type
of those present in both trees is compared.
"""
import fnmatch
import hashlib
import os
import stat
import sys

ALL = "type,content,mode,owner,mtime,dirmtime,links"


def snap(root):
    entries = {"": entry(root)}
    # os.walk never descends into a symlinked directory (followlinks=False).
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            entries[os.path.relpath(full, root)] = entry(full)
    return entries


def entry(path):
    st = os.lstat(path)
    e = {"st": st, "sha": None, "target": None}
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        e["sha"] = h.hexdigest()
    elif stat.S_ISLNK(st.st_mode):
        e["target"] = os.readlink(path)
    return e


def groups(entries):
    """Each inode with more than one name: the sorted tuple of its names."""
    by_ino = {}
    for p, e in entries.items():
        st = e["st"]
        if not stat.S_ISDIR(st.st_mode):
            by_ino.setdefault((st.st_dev, st.st_ino), []).append(p)
    return {tuple(sorted(v)) for v in by_ino.values() if len(v) > 1}


def diff(a, b, what, old_before, volatile=()):
    out = []
    for p in sorted(set(a) | set(b)):
        fields = what
        if any(fnmatch.fnmatchcase(p, g) for g in volatile):
            if p not in a or p not in b:
                continue
            fields = what & {"type"}
        if p not in a:
            out.append(f"{p or '.'}: only in the second tree")
            continue
        if p not in b:
            out.append(f"{p or '.'}: only in the first tree")
            continue
        x, y = a[p]["st"], b[p]["st"]
        name = p or "."
        if "type" in fields and stat.S_IFMT(x.st_mode) != stat.S_IFMT(y.st_mode):
            out.append(f"{name}: type {stat.S_IFMT(x.st_mode):o} != {stat.S_IFMT(y.st_mode):o}")
            continue
        if "content" in fields and (a[p]["sha"] != b[p]["sha"] or a[p]["target"] != b[p]["target"]):
            out.append(f"{name}: content differs")
        if "mode" in fields and stat.S_IMODE(x.st_mode) != stat.S_IMODE(y.st_mode):
            out.append(f"{name}: mode {stat.S_IMODE(x.st_mode):o} != {stat.S_IMODE(y.st_mode):o}")
        if "owner" in fields and (x.st_uid, x.st_gid) != (y.st_uid, y.st_gid):
            out.append(f"{name}: owner {x.st_uid}:{x.st_gid} != {y.st_uid}:{y.st_gid}")
        is_dir = stat.S_ISDIR(x.st_mode)
        field = "dirmtime" if is_dir else "mtime"
        if field in what and x.st_mtime_ns != y.st_mtime_ns and \
                (old_before is None or x.st_mtime_ns < old_before):
            out.append(f"{name}: {'directory ' if is_dir else ''}mtime {x.st_mtime_ns} != {y.st_mtime_ns}")
    if "links" in what:
        ga, gb = groups(a), groups(b)
        for g in sorted(ga - gb):
            out.append(f"link group {' '.join(g)}: not one group in the second tree")
        for g in sorted(gb - ga):
            out.append(f"link group {' '.join(g)}: not one group in the first tree")
    return out


def main(argv):
    if len(argv) < 4 or argv[1] != "diff":
        print(__doc__, file=sys.stderr)
        return 2
    what, old_before, volatile = ALL, None, ()
    i = 4
    while i < len(argv):
        if argv[i] == "--what" and i + 1 < len(argv):
            what = argv[i + 1]
        elif argv[i] == "--old-before" and i + 1 < len(argv):
            old_before = int(argv[i + 1])
        elif argv[i] == "--volatile" and i + 1 < len(argv):
            volatile = tuple(g for g in argv[i + 1].split(",") if g)
        else:
            print(f"tree.py: unknown argument {argv[i]}", file=sys.stderr)
            return 2
        i += 2
    fields = set(what.split(","))
    out = diff(snap(argv[2]), snap(argv[3]), fields, old_before, volatile)
    for line in out[:40]:
        print(line)
    if len(out) > 40:
        print(f"... and {len(out) - 40} more")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
