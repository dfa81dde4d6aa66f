#!/usr/bin/env bash
#: page docs/footprint.md
#: steps
#: show from 'needed files by top directory'
perflab footprint -- python3 -c 'import json'
