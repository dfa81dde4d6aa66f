#!/usr/bin/env bash
#: page docs/minihlt.md
#: in-checkout
#: steps
#: show from '^events/s'
bench/minihlt_builds.sh 10
