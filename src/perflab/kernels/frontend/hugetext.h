/* Remap this program's text onto transparent huge pages (2 MiB) at start.
 *
 * Why: the kernel here may have no READ_ONLY_THP_FOR_FS and no hugetlbfs pages reserved, but
 * anonymous THP (madvise mode) works without any system change. The text segment is linked
 * 2 MiB-aligned (-zmax-page-size=2097152), copied into a 2 MiB-aligned anonymous region that is
 * madvise(MADV_HUGEPAGE)d, made executable and mremap()ped over the original text in one
 * atomic step, so the code that does it keeps running from identical bytes.
 * The result is checked in /proc/self/smaps (AnonHugePages of the new text mapping) and
 * printed as huge_text_kb=N, so the caller knows whether the 2 MiB mode really happened.
 */
#ifndef PERFLAB_HUGETEXT_H
#define PERFLAB_HUGETEXT_H
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PL_HPAGE (2UL << 20)

static long pl_smaps_kb(uintptr_t start, const char *field) {
    char line[512];
    long kb = -1;
    int in = 0;
    size_t flen = strlen(field);
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char c;
        /* a mapping header line is "start-end perms ..."; field lines are "Name:   N kB" */
        if (sscanf(line, "%lx-%lx %c", &a, &b, &c) == 3 && strchr(line, ':') > strchr(line, ' ')) {
            in = (a == start);
        } else if (in && strncmp(line, field, flen) == 0) {
            kb = strtol(line + flen, NULL, 10);
        }
    }
    fclose(f);
    return kb;
}

/* Returns the number of kB of text now on huge pages, or -1 with a reason on stderr. */
static long pl_remap_text_huge(void) {
    uintptr_t self = (uintptr_t)&pl_remap_text_huge, lo = 0, hi = 0, prev_end = 0, next_start = 0;
    uintptr_t last_end = 0;
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) { perror("perflab: /proc/self/maps"); return -1; }
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) != 2) continue;
        if (self >= a && self < b) { lo = a; hi = b; prev_end = last_end; }
        else if (lo && !next_start && a >= hi) next_start = a;
        last_end = b;
    }
    fclose(f);
    if (!lo) { fprintf(stderr, "perflab: text mapping not found\n"); return -1; }
    uintptr_t hs = lo & ~(PL_HPAGE - 1), he = (hi + PL_HPAGE - 1) & ~(PL_HPAGE - 1);
    if (hs < prev_end || (next_start && he > next_start)) {
        fprintf(stderr, "perflab: text is not 2 MiB-aligned (link with -zmax-page-size=2097152)\n");
        return -1;
    }
    size_t len = he - hs;
    char *raw = mmap(NULL, len + PL_HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { perror("perflab: mmap"); return -1; }
    char *t = (char *)(((uintptr_t)raw + PL_HPAGE - 1) & ~(PL_HPAGE - 1));
    if (madvise(t, len, MADV_HUGEPAGE) != 0) { perror("perflab: madvise(MADV_HUGEPAGE)"); return -1; }
    memcpy(t + (lo - hs), (void *)lo, hi - lo);
    if (mprotect(t, len, PROT_READ | PROT_EXEC) != 0) { perror("perflab: mprotect"); return -1; }
    if (mremap(t, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)hs) == MAP_FAILED) {
        perror("perflab: mremap");
        return -1;
    }
    return pl_smaps_kb(hs, "AnonHugePages:");
}
#endif
