#!/usr/bin/env bash
#: page docs/statistics.md
# The page's python block is the script: the code shown is the code run.
awk '/^```python/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/statistics.md > stats_demo.py
#: steps
python stats_demo.py
