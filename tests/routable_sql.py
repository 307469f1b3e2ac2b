#!/usr/bin/env python3
"""lint.routable_sql: every statement of the SQL functions (src/store/functions) names the
organization it touches by a plain value: a parameter, a variable or a record's field, never an
array's element or a function's result. Citus routes a statement on a distributed table to the
one shard holding the organization only by a plain value of its distribution column (org_id);
given `org_id = w_org[k]` it sent an UPDATE to every shard of every worker, in a two-phase
commit, which one PostgreSQL never shows.

    routable_sql.py SOURCE_DIR
"""
import pathlib
import re
import sys

# org_id compared with an operand that is not a plain (possibly qualified) name or parameter.
PLAIN = r"(?:\$\d+|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)"
COMPARED = re.compile(r"\borg_id\s*=\s*(\S+)|(\S+)\s*=\s*(?:[A-Za-z_][A-Za-z0-9_]*\.)?org_id\b")


def problems(path):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("--", 1)[0]
        for match in COMPARED.finditer(code):
            operand = (match.group(1) or match.group(2)).rstrip(",;)")
            if not re.fullmatch(PLAIN, operand):
                yield f"{path}:{number}: org_id compared with {operand!r}: give it a variable"


def main():
    root = pathlib.Path(sys.argv[1]) / "src" / "store" / "functions"
    found = [p for path in sorted(root.glob("*.sql")) for p in problems(path)]
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
