#!/usr/bin/env bash
#: page docs/contributing.md
#: in-checkout
#: steps
bench/shape.sh
