#!/usr/bin/env bash
#: page README.md
mkdir -p src/perflab/examples && cp "$CHECKOUT"/src/perflab/examples/trigger-farm-platforms.toml src/perflab/examples/
#: steps
perflab cost src/perflab/examples/trigger-farm-platforms.toml | tail -2
