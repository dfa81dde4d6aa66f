#!/usr/bin/env bash
#: page README.md
#: steps
perflab machine | tail -4
