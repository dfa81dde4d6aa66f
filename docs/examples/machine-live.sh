#!/usr/bin/env bash
#: page docs/machine.md
#: steps
perflab machine
