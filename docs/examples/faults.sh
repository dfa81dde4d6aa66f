#!/usr/bin/env bash
#: page README.md
#: steps
#: show matching '^perflab: error'
perflab cores --rounds 2 --min-rounds 2 -- false
#: show matching '^perflab: interrupted'
timeout -s TERM 5 perflab instances -w minihlt-quick --n 1,2,3,4 --policy none --reps 20
perflab resume | tail -1
perflab cores --cpus 999 -- true
perflab bundle -o b.tgz -- true > /dev/null && head -c 3000 b.tgz > truncated.tgz
perflab bundle verify truncated.tgz
