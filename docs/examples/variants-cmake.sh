#!/usr/bin/env bash
#: page docs/variants.md
#: steps
#: show without '^round \d+'
perflab variants -w minihlt --build cmake -V O3-native='-O3 -march=native' -V lto='-O2 -flto' -V pgo='-O2 pgo' -V fastmath='-O2 -ffast-math' --events 30 --static-mb 60
