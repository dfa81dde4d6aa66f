#!/usr/bin/env bash
#: page docs/import.md
cp "$CHECKOUT"/tests/data/hepscore/hepscore_result_expected_output.json hepscore-result.json && cp "$CHECKOUT"/tests/data/hepscore/ref_summary_output.json suite-report.json
#: steps
#: block 1
perflab import hepscore-result.json
#: block 2
perflab import suite-report.json
#: block 3
perflab score --compare 1 1 | tail -1
