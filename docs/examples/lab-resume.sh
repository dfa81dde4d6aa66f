#!/usr/bin/env bash
#: page docs/lab.md
#: steps
perflab lab --quick --studies run,cores --db lab.db --out out > lab.log 2>&1 &
#: hidden
until [ "$(sqlite3 lab.db 'select count(*) from measurements' 2>/dev/null || echo 0)" -ge 5 ]; do sleep 0.1; done
#: show without 'Killed'
kill -9 %1                     # after 5 measurements were stored
#: show without 'Killed'
sqlite3 lab.db 'select id, study, name, status, parent_id from campaigns'
#: show lab-summary
perflab lab --resume --db lab.db
