#!/usr/bin/env python3
"""json-check.py SCHEMA DEF [FILE] -- validate one JSON text against a definition.

Reads FILE (default: stdin), parses it as one JSON text and validates it
against `#/$defs/DEF` of SCHEMA (a JSON Schema, draft 2020-12, with the
python3-jsonschema Debian package). Exit 0 when it is valid, 1 with the
first errors on stderr when it is not, 2 when it is not JSON or SCHEMA has
no such definition.
"""
import json
import sys

import jsonschema


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    if argv[2] not in schema.get("$defs", {}):
        print(f"json-check: {argv[1]} has no definition {argv[2]}", file=sys.stderr)
        return 2
    text = open(argv[3], encoding="utf-8").read() if len(argv) == 4 else sys.stdin.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        print(f"json-check: not one JSON text: {e}: {text[:200]!r}", file=sys.stderr)
        return 2
    jsonschema.Draft202012Validator.check_schema(schema)
    # The definition, with the schema's own $defs beside it for its $refs.
    target = dict(schema["$defs"][argv[2]])
    target["$defs"] = schema["$defs"]
    errors = sorted(jsonschema.Draft202012Validator(target).iter_errors(doc),
                    key=lambda e: list(e.absolute_path))
    for e in errors[:5]:
        where = "/".join(str(p) for p in e.absolute_path) or "(the whole text)"
        print(f"json-check: {argv[2]}: at {where}: {e.message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
