#!/usr/bin/env bash
#: page docs/cost.md
cp "$CHECKOUT"/docs/examples/inputs/p.toml p.toml
#: steps
#: show matching '^(energy|answer):'
perflab instances --energy auto -w minihlt-quick --n 1,2 --policy none
cat p.toml
perflab cost p.toml; echo $?
sed -i '/power_from_campaign/d' p.toml
perflab cost p.toml
