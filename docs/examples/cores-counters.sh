#!/usr/bin/env bash
#: page docs/cores.md
#: steps
#: show without '^round \d+:|^results: '
perflab cores -w minihlt-quick --counters --rounds 6
