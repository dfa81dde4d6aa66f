#!/usr/bin/env bash
#: page README.md
#: steps
#: show matching '^(verdict|note|CPU \d)'
perflab cores -w minihlt-quick --rounds 20
