#!/usr/bin/env bash
#: page docs/profile.md
# A job perflab attaches to: minihlt copied out of the build cache, as docs/profile.md shows.
cp $(perflab workload path minihlt) minihlt-O2
#: steps
./minihlt-O2 --fork 2 --events 1000000 --seconds 120 > fjob.log &
perflab profile --pid $! --log fjob.log --event 1000 --annotate 0
perflab profile --pid $! --children --log fjob.log --event 2000 --annotate 0 --threshold 4
#: cleanup
for p in $(jobs -p); do pkill -P $p; kill $p; done 2>/dev/null; wait
