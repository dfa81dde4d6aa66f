#!/usr/bin/env bash
#: page docs/workload.md
cat > never.toml <<'TOML'
[workload.enc]
command = "echo fps= 181.5 frames=100"
shell = true
metrics = ['FPS: (?P<fps>[\d.]+)']
primary_metric = "fps"
TOML
#: steps
#: show matching '^warning: metric regex'
perflab run --runs 3 --metric 'fps=(?P<fps>\d+)' --metric 'q=(?P<q>\S+)' -- sh -c 'echo frame=10 q=n/a'
cat never.toml
perflab run --runs 3 -w enc --config never.toml; echo $?
