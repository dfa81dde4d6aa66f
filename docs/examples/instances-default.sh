#!/usr/bin/env bash
#: page docs/instances.md
#: steps
#: show without '^round \d+/\d+ done$'
perflab instances -w minihlt-quick --json i.json
