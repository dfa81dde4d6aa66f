#!/usr/bin/env bash
#: page docs/variants.md
mkdir -p tests/data && cp -r "$CHECKOUT"/tests/data/fmsum tests/data/
cp -r tests/data/fmsum fmsum && cp -r fmsum broken && echo 'int main(void) { return undefined_thing; }' > broken/fmsum.c
#: steps
perflab variants --build 'make CC={cc} -j{jobs}' --src fmsum --exe fmsum -V O3=-O3 -- {exe}
perflab variants --build 'make -C {src} CFLAGS={cflgs}' --src fmsum --exe fmsum -V O3=-O3 -- {exe}
perflab variants --build make --src broken --exe fmsum -V O3=-O3 -- {exe}
perflab variants --build cmake --src broken --exe fmsum -V O3=-O3 -- {exe}
