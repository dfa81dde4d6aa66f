#!/usr/bin/env bash
#: page docs/cost.md
cp "$CHECKOUT"/tests/data/hepscore/hepscore_result_expected_output.json hepscore-result.json && cp "$CHECKOUT"/tests/data/hepscore/ref_summary_output.json suite-report.json
cp "$CHECKOUT"/docs/examples/inputs/platforms.toml platforms.toml
#: steps
cat platforms.toml
perflab import hepscore-result.json | grep '^score'
perflab import suite-report.json | grep '^score'
perflab cost platforms.toml
