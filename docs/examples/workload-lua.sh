#!/usr/bin/env bash
#: page docs/workload.md
# Lua 5.4.4 as the page says: the upstream tarball of Debian's source package (apt-get source,
# with a deb-src line of its own so the system's apt set-up is left alone; $LUA_TARBALL skips
# the download), built once; bench.lua and the luabench workload are the page's own lua and
# toml blocks.
if [ -n "$LUA_TARBALL" ]; then cp "$LUA_TARBALL" .; else
mkdir -p apt/lists/partial
echo 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main' > apt/src.list
APT="-o Dir::Etc::SourceList=$PWD/apt/src.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$PWD/apt/lists"
apt-get $APT -qq update && apt-get $APT -qq source --download-only lua5.4 > /dev/null 2>&1; fi
tar xzf lua5.4_5.4.4.orig.tar.gz && mv lua-5.4.4 lua && make -C lua > /dev/null 2>&1
awk '/^```lua/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/workload.md > bench.lua
awk '/^```toml/{f=1;b="";next} f&&/^```/{if(b~/workload.luabench/)printf "%s",b;f=0;next} f{b=b $0 "\n"}' "$CHECKOUT"/docs/workload.md > perflab.toml
#: steps
#: block 1
perflab run --db lua.db -r 10 -w luabench
#: block 2
make -C lua clean > /dev/null && make -C lua MYCFLAGS=-O0 > /dev/null
perflab run --db lua.db -r 10 -w luabench > /dev/null
perflab compare --db lua.db 1 2
#: block 3
#: show without '^round \d+'
perflab variants --db lua.db -w luabench --build make --src lua --exe src/lua -V o2='-O2' -V o3='-O3' -V pgo='pgo -O2' --baseline o2
#: block 4
#: show matching '^(o2|o3|pgo): built' '^o3: score' '^verdict: '
perflab variants --db lua.db -w luabench --build 'make -C {src} CC={cc} MYCFLAGS={cflags} MYLDFLAGS={ldflags} -j{jobs}' --src lua --exe src/lua -V o2='-O2' -V o3='-O3' -V pgo='pgo -O2' --baseline o2
