#!/usr/bin/env bash
#: page docs/variants.md
mkdir -p tests/data && cp -r "$CHECKOUT"/tests/data/fmsum tests/data/
#: steps
cp tests/data/fmsum/fmsum.c .
#: show without '^round \d+'
perflab variants --source fmsum.c -V base=-O0 -V O2=-O2 -V O3=-O3 --baseline base -- {exe} 100000
