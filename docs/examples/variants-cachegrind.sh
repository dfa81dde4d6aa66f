#!/usr/bin/env bash
#: page docs/variants.md
cp "$CHECKOUT"/docs/examples/inputs/sum.c sum.c
#: steps
#: show from 'variants vs baseline'
perflab variants --source sum.c -V O0='-O0' -V O3='-O3' --rounds 10 --instrument cachegrind -- '{exe}'
