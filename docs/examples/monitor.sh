#!/usr/bin/env bash
#: page docs/energy.md
#: steps
#: show matching '^monitor' '^machine beside' '^(┃|│) *(phase|idle|study)' '^(┏|┡)━{13}(┳|╇)' '^└─{13}┴' '^note: (the idle|\w+: net energy|energy per event)' '^energy' '^results: '
perflab instances -w minihlt-quick --n 1,2 --policy none --monitor --idle 5s
perflab results 1 --monitor-csv monitor.csv > /dev/null; head -3 monitor.csv
perflab report 1 -o monitor.html
