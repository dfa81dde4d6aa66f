#!/usr/bin/env bash
#: page docs/cores.md
#: steps
#: show without '^(block \d+, )?round \d+:'
perflab cores -w minihlt-quick
