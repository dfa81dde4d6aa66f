#!/usr/bin/env bash
#: page docs/cores.md
# The page's python block is the competitor: the code shown is the code run.
awk '/^```python/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/cores.md > duty40.py
#: steps
#: show without '^(block \d+, )?round \d+:'
timeout 20 chrt -f 1 taskset -c 1 python3 duty40.py & perflab cores -w minihlt-quick
#: cleanup
wait
