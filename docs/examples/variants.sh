#!/usr/bin/env bash
#: page README.md
#: steps
#: show matching '^(verdict|m32|mx32|m64):'
perflab variants -w minihlt --build make --matrix abi=m64,m32,mx32 --events 20 --static-mb 32 --rounds 10
