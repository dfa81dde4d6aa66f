/* Print this CPU's TLB geometry from cpuid, one line per TLB:
 *   tlb level=L type=instruction|data|unified page=4K|2M|4M|1G entries=E source=...
 * AMD: leaves 0x80000005 (L1) and 0x80000006 (L2). Intel: leaf 0x18 (deterministic address
 * translation parameters) where present, else the leaf 0x2 descriptor bytes we know.
 * Why a C program: cpuid is an instruction, not a file; /proc/cpuinfo does not list TLB sizes.
 */
#include <cpuid.h>
#include <stdio.h>
#include <string.h>

static void line(int level, const char *type, const char *page, unsigned entries, const char *src) {
    if (entries) printf("tlb level=%d type=%s page=%s entries=%u source=%s\n", level, type, page, entries, src);
}

/* One AMD TLB leaf: EAX holds the 2M/4M TLBs, EBX the 4K ones, instruction in the low half. */
static void amd_leaf(unsigned leaf, int level, unsigned mask) {
    unsigned a, b, c, d;
    char src[32];
    __cpuid(leaf, a, b, c, d);
    snprintf(src, sizeof src, "cpuid %#x", leaf);
    line(level, "instruction", "2M", a & mask, src);
    line(level, "data", "2M", (a >> 16) & mask, src);
    line(level, "instruction", "4K", b & mask, src);
    line(level, "data", "4K", (b >> 16) & mask, src);
}

static void amd(void) {
    unsigned max, b, c, d;
    __cpuid(0x80000000, max, b, c, d);
    /* L1 (0x80000005) counts entries in 8 bits, L2 (0x80000006) in 12. */
    if (max >= 0x80000005) amd_leaf(0x80000005, 1, 0xff);
    if (max >= 0x80000006) amd_leaf(0x80000006, 2, 0xfff);
}

static int intel_leaf18(unsigned max) {
    static const char *types[] = {"none", "data", "instruction", "unified", "data", "data"};
    static const char *pages[] = {"4K", "2M", "4M", "1G"};
    unsigned a, b, c, d, sub, nsub;
    if (max < 0x18) return 0;
    __cpuid_count(0x18, 0, nsub, b, c, d);
    int found = 0;
    for (sub = 0; sub <= nsub && sub < 64; sub++) {
        __cpuid_count(0x18, sub, a, b, c, d);
        unsigned type = d & 0x1f, level = (d >> 5) & 7;
        if (type == 0 || type > 5) continue;
        unsigned entries = ((b >> 16) & 0xffff) * c;
        for (int p = 0; p < 4; p++)
            if (b & (1u << p)) { line(level, types[type], pages[p], entries, "cpuid 0x18"); found = 1; }
    }
    return found;
}

struct desc { unsigned char code; int level; const char *type; const char *page; unsigned entries; };
static const struct desc descs[] = {
    {0x01, 1, "instruction", "4K", 32}, {0x02, 1, "instruction", "4M", 2},
    {0x03, 1, "data", "4K", 64}, {0x0b, 1, "instruction", "4M", 4},
    {0x4f, 1, "instruction", "4K", 32}, {0x50, 1, "instruction", "4K", 64},
    {0x51, 1, "instruction", "4K", 128}, {0x52, 1, "instruction", "4K", 256},
    {0x55, 1, "instruction", "2M", 7}, {0x61, 1, "instruction", "4K", 48},
    {0x76, 1, "instruction", "2M", 8}, {0xb0, 1, "instruction", "4K", 128},
    {0xb1, 1, "instruction", "2M", 8}, {0xb2, 1, "instruction", "4K", 64},
    {0xb5, 1, "instruction", "4K", 64}, {0xb6, 1, "instruction", "4K", 128},
    {0xc1, 2, "unified", "4K", 1024}, {0xc3, 2, "unified", "4K", 1536},
    {0xca, 2, "unified", "4K", 512},
};

static void intel_leaf2(void) {
    unsigned r[4];
    __cpuid(2, r[0], r[1], r[2], r[3]);
    for (int i = 0; i < 4; i++) {
        if (r[i] & 0x80000000u) continue; /* register holds no descriptors */
        for (int k = (i == 0 ? 1 : 0); k < 4; k++) {
            unsigned char code = (r[i] >> (8 * k)) & 0xff;
            for (unsigned j = 0; j < sizeof descs / sizeof descs[0]; j++)
                if (descs[j].code == code) line(descs[j].level, descs[j].type, descs[j].page, descs[j].entries, "cpuid 0x2");
        }
    }
}

int main(void) {
    unsigned max, b, c, d;
    char vendor[13];
    __cpuid(0, max, b, c, d);
    memcpy(vendor, &b, 4); memcpy(vendor + 4, &d, 4); memcpy(vendor + 8, &c, 4); vendor[12] = 0;
    printf("vendor=%s\n", vendor);
    if (strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0) amd();
    else if (!intel_leaf18(max)) intel_leaf2();
    return 0;
}
