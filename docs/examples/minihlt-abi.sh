#!/usr/bin/env bash
#: page docs/minihlt.md
#: steps
#: block 1
/usr/bin/time -f "maxrss %M KB" $(perflab workload path minihlt) --events 1 2>&1 | tail -1
/usr/bin/time -f "maxrss %M KB" $(perflab workload path minihlt --cflags "-O2 -m32 -msse2 -mfpmath=sse") --events 1 2>&1 | tail -1
#: block 2
#: show elide-sources
perflab workload build minihlt
perflab workload path minihlt
#: block 3
$(perflab workload path minihlt --cflags "-O2 -mx32") --events 1; echo $?
