#!/usr/bin/env bash
#: page docs/instances.md
mkdir -p tests/data/topologies && cp "$CHECKOUT"/tests/data/topologies/memorysidecaches.tar.bz2 tests/data/topologies/
#: steps
tar xjf tests/data/topologies/memorysidecaches.tar.bz2
perflab instances --plan --root memorysidecaches --n 1,2,4,6 --policy compact --policy spread --policy numa --threads-per-copy 4
