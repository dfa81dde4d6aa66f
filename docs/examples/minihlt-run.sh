#!/usr/bin/env bash
#: page docs/minihlt.md
#: steps
MINIHLT=$(perflab workload path minihlt)
#: show head-tail 5 6
$MINIHLT --events 4 --static-mb 32
$MINIHLT --events 6 --static-mb 32 --fork 2 | tail -7
