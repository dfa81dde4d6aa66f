#!/usr/bin/env bash
#: page docs/variants.md
#: steps
perflab variants --link-order-demo
