#!/usr/bin/env bash
#: page README.md
#: steps
$(perflab workload path minihlt) --events 1000000 --seconds 60 > job.log &
#: show matching '^recording 1/1:' --rows 2
perflab profile --pid $! --log job.log --start 'start processing event #300\b' --stop 'done processing event #319\b'
kill %1
#: cleanup
wait
