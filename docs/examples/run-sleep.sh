#!/usr/bin/env bash
#: page docs/run.md
#: steps
perflab run --runs 30 -- sleep 0.01
