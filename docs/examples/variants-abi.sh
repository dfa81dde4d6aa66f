#!/usr/bin/env bash
#: page docs/variants.md
#: steps
#: show without '^round \d+'
perflab variants --db doc.db -w minihlt --build make --matrix abi=m64,m32,mx32 --events 30 --static-mb 60
