#!/usr/bin/env bash
#: page docs/compare.md
cat > perflab.toml <<'TOML'
[workload.enc]
command = "echo fps=$FPS"
shell = true
metrics = ['fps=(?P<fps>[\d.]+)']
primary_metric = "fps"
higher_is_better = true
TOML
#: steps
cat perflab.toml
FPS=100 perflab run -w enc --runs 6 > /dev/null; FPS=150 perflab run -w enc --runs 6 > /dev/null
perflab compare 1 2
perflab compare 1 2 --json - | python3 -c 'import json, sys; print(json.dumps(next(r for r in json.load(sys.stdin)["result"]["rows"] if r["measure"] == "metric:fps")))'
