#!/usr/bin/env bash
#: page docs/cores.md
#: steps
#: show without '^block \d+'
perflab cores -w minihlt-quick --until-decided --span 20 --max-time 120
