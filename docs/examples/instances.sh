#!/usr/bin/env bash
#: page README.md
#: steps
#: show matching '^(answer|memory at|note: N above)' '^(┏|┡)━━━[┳╇]' '^└───┴' '^┃ N ┃' --rows 4
perflab instances -w minihlt-quick --n 1,2,3,4 --policy none
