#!/usr/bin/env bash
#: page README.md
cat > enc.sh <<'EOF'
for f in 1 2 3; do printf "frame= $f fps= %d\r" $((f*20)) >&2; sleep 0.01; done; echo >&2
EOF
#: steps
cat enc.sh
#: show matching '^│ encoder'
perflab run --runs 5 -n encoder --metric 'stderr:last:fps=\s*(?P<fps>[\d.]+)' --metric 'stderr:count:frame=\s*(?P<frames>\d+)' -- sh enc.sh
