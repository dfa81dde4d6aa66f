#!/usr/bin/env bash
#: page docs/variants.md
cp "$CHECKOUT"/docs/examples/inputs/sum.c sum.c
#: steps
cat sum.c
perflab variants --db doc.db --source sum.c -V O1=-O1 --rounds 6 -- '{exe}'
perflab variants --energy rapl --source sum.c -V O1=-O1 -- '{exe}'; echo $?
