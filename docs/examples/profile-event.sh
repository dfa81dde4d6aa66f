#!/usr/bin/env bash
#: page docs/profile.md
#: steps
#: show without '^perf.data: '
perflab profile -w minihlt --event 42 --repeat 3 --threshold 3
