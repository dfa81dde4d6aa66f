#!/usr/bin/env bash
#: page docs/lab.md
#: in-checkout
#: steps
bench/lab_quick.sh
