#!/usr/bin/env bash
#: page docs/report.md
#: steps
#: show matching 'studies done in' '^report: '
perflab lab --quick --db lab.db --out out
perflab report --db lab.db -o r.html
perflab report --db lab.db -o r.md
head -12 r.md
