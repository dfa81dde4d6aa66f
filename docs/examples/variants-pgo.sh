#!/usr/bin/env bash
#: page docs/variants.md
mkdir -p tests/data && cp -r "$CHECKOUT"/tests/data/fmsum tests/data/
#: steps
#: block 1
cp -r tests/data/fmsum . && echo 3000 > train.txt
#: show without '^round \d+'
perflab variants --db doc.db --config fmsum/perflab.toml -V pgo='-O2 pgo' --train '{exe} -f train.txt' --metric 'checksum: (?P<checksum>\S+)' --json fm.json -- {exe} 20000
#: block 2
python3 -c 'import json; print(json.dumps(json.load(open("fm.json"))["result"]["variants"][1]["comparisons"]["wall_s"]))'
