#!/usr/bin/env bash
#: page docs/frontend.md
#: steps
#: show without '^\d+/\d+ runs$'
perflab frontend --db fe.db
