#!/usr/bin/env bash
#: page docs/bundle.md
cat > engine.sh <<'SH'
# a stand-in chess engine: its result, then its speed, which changes run to run
echo "bestmove e2e4"
echo "nodes 1000 nps $(( 300000000 + $(od -An -N2 -tu2 /dev/urandom) ))"
SH
#: steps
cat engine.sh
#: show matching '^(wrote|perflab: error)'
perflab bundle -o b.tgz -- sh engine.sh
perflab bundle verify b.tgz; echo $?
