#!/usr/bin/env bash
# The codebase's shape against its targets: file sizes, the studies' share of the code and their
# packages, duplicated blocks, import direction and cycles, resumable studies, `perflab --help` start-up.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" - <<'PYCODE'
import ast, importlib, pathlib
src = pathlib.Path("src/perflab")
files = {p: len(p.read_text().splitlines()) for p in src.rglob("*.py")}
total = sum(files.values())
studies = sum(n for p, n in files.items() if "studies" in p.parts)
big = sorted(((n, str(p.relative_to(src))) for p, n in files.items() if n > 600), reverse=True)
largest = max(files.items(), key=lambda kv: kv[1])
print(f"python files: {len(files)}, {total} lines; largest {largest[0].relative_to(src)} ({largest[1]} lines)")
print(f"files over 600 lines: {len(big)} (target 0){': ' + ', '.join(f'{f} {n}' for n, f in big) if big else ''}")
print(f"studies/ share of the lines: {studies / total:.1%} (target < 35%)")
pkgs = sorted(p.name for p in (src / "studies").iterdir() if (p / "study.py").exists())
loose = sorted(p.name for p in (src / "studies").glob("*.py") if p.name != "__init__.py")
print(f"study packages: {len(pkgs)} ({', '.join(pkgs)}); shared modules beside them: {', '.join(loose)}")
from perflab.studies import STUDIES
ok = [name for name, mod in STUDIES.items() if hasattr(importlib.import_module(mod), "execute")]
print(f"resumable studies: {len(ok)} of {len(STUDIES)} ({', '.join(ok)})")
PYCODE
if command -v duplicates >/dev/null; then
  pairs=$(duplicates --repo src/perflab --most 200 | grep -c '^D[0-9]' || true)
  echo "duplicates pairs in src/perflab: $pairs (target <= 6)"
else
  echo "duplicates pairs: the 'duplicates' tool is not on PATH here; not measured"
fi
if "$PY" -m pytest -q -p no:cacheprovider tests/unit/test_layout.py >/dev/null 2>&1; then
  echo "import direction and package cycles: 0 violations (tests/unit/test_layout.py passes)"
else
  echo "import direction and package cycles: VIOLATIONS (run pytest tests/unit/test_layout.py)"
fi
if command -v hyperfine >/dev/null; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  hyperfine -N --warmup 3 --runs 20 --export-json "$tmp/h.json" ".venv/bin/perflab --help" >/dev/null 2>&1
  "$PY" -c "import json,sys; r=json.load(open('$tmp/h.json'))['results'][0]; print(f\"perflab --help: median {r['median']*1e3:.0f} ms (target < 150 ms)\")"
fi
