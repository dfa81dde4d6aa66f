#!/usr/bin/env bash
#: page docs/lab.md
cp "$CHECKOUT"/docs/examples/inputs/enc.toml perflab.toml
#: steps
cat perflab.toml
#: show matching '^warning: metric regex' '^report: '
perflab lab -w enc --quick --studies run --db l.db --out lab --primary-metric fps --lower-is-better
perflab lab -w enc --quick --db l.db --primary-metric nps
