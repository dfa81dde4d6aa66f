#!/usr/bin/env bash
# README.md = docs/README.head.md + every docs/sections/*.md in order (each study documents itself).
set -euo pipefail
cd "$(dirname "$0")/.."
{
  cat docs/README.head.md
  for f in docs/sections/*.md; do
    echo
    cat "$f"
  done
} > README.md
