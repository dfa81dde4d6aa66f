#!/usr/bin/env bash
#: page docs/energy.md
#: steps
#: show matching '^energy:'
perflab run --energy auto --runs 2 -- true
