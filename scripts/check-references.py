#!/usr/bin/env python3
"""Every "§" reference in the repository names a section that exists in the repository.

The code cites two documents: `DESIGN §N` is docs/design.md (the architecture as it is) and
`spec §N` is docs/spec/grelmicro-behaviour.md (grelmicro's behaviour, which Tenure keeps). A bare
`§N` belongs to the document named last before it on its line, or on the nearest line above
that names one, through lines that carry only bare references (a list that goes on); inside
docs/spec/ and docs/design.md it may name its own document. A section is a Markdown heading
numbered N (`## 4. …`, `### 4.5 …`), or item M of the numbered list under heading N for `§N.M`.
A range such as `spec §3.1–3.3` needs both ends. Usage: scripts/check-references.py (from anywhere)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = {"DESIGN": "docs/design.md", "spec": "docs/spec/grelmicro-behaviour.md"}
# The names a line may give a document by, mapped to its key in DOCS.
NAMES = re.compile(r"\b(DESIGN|design\.md|spec|grelmicro-behaviour\.md)\b")
REFERENCE = re.compile(r"§\s*(\d+(?:\.\d+)*)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s")
ITEM = re.compile(r"^(\d+)\.\s")


def sections(path: Path) -> set[str]:
    """The numbers of `path`'s headings, and `N.M` for item M of a numbered list under heading N."""
    found: set[str] = set()
    heading = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := HEADING.match(line):
            heading = match.group(1)
            found.add(heading)
        elif line.startswith("#"):
            heading = None
        elif heading and (match := ITEM.match(line)):
            found.add(f"{heading}.{match.group(1)}")
    return found


def document(name: str) -> str:
    return "DESIGN" if name in ("DESIGN", "design.md") else "spec"


def main() -> int:
    known = {key: sections(ROOT / path) for key, path in DOCS.items() if (ROOT / path).exists()}
    missing = [path for key, path in DOCS.items() if key not in known]
    if missing:
        print(f"check-references: {', '.join(missing)} missing", file=sys.stderr)
        return 1
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    problems, count = [], 0
    for raw in files:
        if not raw:
            continue
        path = raw.decode()
        try:
            lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        own = next((key for key, doc in DOCS.items() if path == doc), "spec" if path.startswith("docs/spec/") else None)
        previous = None  # the document named last on the line above
        for number, line in enumerate(lines, 1):
            for match in REFERENCE.finditer(line):
                named = [m for m in NAMES.finditer(line) if m.start() < match.start()]
                doc = document(named[-1].group(1)) if named else previous or own
                count += 1
                where = f"{path}:{number}"
                if doc is None:
                    problems.append(f"{where}: §{match.group(1)} names no document (write DESIGN §… or spec §…)")
                    continue
                for end in filter(None, match.groups()):
                    if end not in known[doc]:
                        problems.append(f"{where}: {doc} §{end} is not a section of {DOCS[doc]}")
            names = NAMES.findall(line)
            previous = document(names[-1]) if names else (previous if "§" in line else None)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"check-references: {count} references, {len(problems)} unresolved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
