#!/usr/bin/env bash
#: page docs/profile.md
# A job perflab attaches to: minihlt copied out of the build cache, as docs/profile.md shows.
cp $(perflab workload path minihlt) minihlt-O2
#: steps
./minihlt-O2 --events 1000000 --seconds 120 > job.log &
#: hidden
sleep 1
tail -1 job.log
perflab profile --pid $! --log job.log --start 'start processing event #300\b' --stop 'done processing event #319\b' --annotate 2 --threshold 3
#: cleanup
for p in $(jobs -p); do pkill -P $p; kill $p; done 2>/dev/null; wait
