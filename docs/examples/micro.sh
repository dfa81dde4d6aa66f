#!/usr/bin/env bash
#: page docs/micro.md
#: steps
#: show without '^\d+/\d+ runs$|^results: '
perflab micro --shm off --io-dir /tmp
