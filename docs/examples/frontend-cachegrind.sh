#!/usr/bin/env bash
#: page docs/frontend.md
#: steps
perflab frontend --instrument cachegrind --max-size 1M --db fe.db
