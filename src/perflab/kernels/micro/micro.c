/* perflab micro: one driver for every microbenchmark, built once per ABI (-m64, -m32, -mx32).
 *
 *   micro --bench NAME --iters N [--dir DIR] [--size BYTES] [--total BYTES]
 * prints one line: bench=NAME iters=N ns_per_op=X [extra=value ...]
 * The timed region covers only the N operations (clock_gettime, CLOCK_MONOTONIC); set-up such as
 * opening the temporary file is outside it. Results feed an asm barrier so nothing is optimised
 * away. Operations follow seeds 002 (getpid, strcpy, 64-bit arithmetic, shm beyond 4 GiB),
 * 003 (sin/log loops, write vs fprintf vs fflush vs O_SYNC) and 000 (malloc thresholds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BARRIER(x) __asm__ volatile("" : : "g"(x) : "memory")

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static long minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void report(const char *name, long iters, double secs, const char *extra) {
    printf("bench=%s iters=%ld abi_bits=%d ns_per_op=%.4f ops_per_s=%.1f%s%s\n", name, iters,
           (int)(8 * sizeof(void *)), 1e9 * secs / iters, iters / secs, extra[0] ? " " : "", extra);
}

__attribute__((noinline)) static long callee(long x) {
    __asm__ volatile("" : "+r"(x)); /* not inlined, not folded: a real call and return */
    return x + 1;
}

static int tmpfile_in(const char *dir, int extra_flags, char *path, size_t len) {
    snprintf(path, len, "%s/perflab-micro-XXXXXX", dir);
    int fd = mkostemp(path, extra_flags);
    if (fd < 0) { fprintf(stderr, "cannot create a temporary file in %s: %s\n", dir, strerror(errno)); exit(3); }
    return fd;
}

static int io_bench(const char *name, long iters, const char *dir) {
    char path[4096];
    int sync = strcmp(name, "write_osync") == 0;
    int fd = tmpfile_in(dir, sync ? O_SYNC : 0, path, sizeof path);
    FILE *f = NULL;
    if (strncmp(name, "fprintf", 7) == 0 && !(f = fdopen(fd, "w"))) { perror("fdopen"); return 3; }
    int flush = strcmp(name, "fprintf_fflush") == 0;
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        if (f) {
            fprintf(f, "a");
            if (flush) fflush(f);
        } else if (write(fd, "a", 1) != 1) {
            perror("write");
            return 3;
        }
    }
    if (f) fflush(f); /* the buffered bytes must reach the file inside the timed region too */
    double t1 = now();
    if (f) fclose(f); else close(fd);
    unlink(path);
    report(name, iters, t1 - t0, "");
    return 0;
}

/* malloc+touch+free of SIZE bytes, holding a batch so brk growth and mmap'd blocks are visible */
static int malloc_bench(const char *name, long iters, size_t size) {
    enum { BATCH = 16 };
    void *held[BATCH];
    long f0 = minflt();
    char *brk0 = sbrk(0);
    size_t max_hblks = 0;
    long brk_grow = 0;
    double t0 = now();
    for (long i = 0; i < iters; i += BATCH) {
        int k = iters - i < BATCH ? (int)(iters - i) : BATCH;
        for (int j = 0; j < k; j++) {
            char *p = malloc(size);
            if (!p) { fprintf(stderr, "malloc(%zu) failed\n", size); return 3; }
            p[0] = 1; p[size - 1] = 1; /* touch the first and last page */
            held[j] = p;
        }
        if (i == 0) {
            struct mallinfo2 mi = mallinfo2();
            max_hblks = mi.hblks; /* blocks malloc serves by mmap, now live */
            brk_grow = (char *)sbrk(0) - brk0;
        }
        for (int j = 0; j < k; j++) free(held[j]);
    }
    double t1 = now();
    char extra[256];
    snprintf(extra, sizeof extra, "size=%zu minflt_per_op=%.3f mmap_blocks_per_batch=%zu brk_growth_bytes=%ld batch=%d",
             size, (double)(minflt() - f0) / iters, max_hblks, brk_grow, BATCH);
    report(name, iters, t1 - t0, extra);
    return 0;
}

/* seed 000's threshold, measured: which sizes malloc serves by mmap (mallinfo2's hblks counts
 * live mmapped blocks). Sizes grow by 2^(1/4) from 64 KiB to 256 MiB; each is allocated, freed,
 * and allocated again. The first allocation of the smallest mmapped size is the initial
 * threshold. Freeing an mmapped block raises the threshold to its size up to a maximum, so the
 * repeat comes from brk; above the maximum the repeat is mmapped again. The maximum lies between
 * the last size whose repeat used brk and the first whose repeat used mmap. */
static int is_mmapped(size_t size, void **out) {
    size_t before = mallinfo2().hblks;
    *out = malloc(size);
    if (!*out) { fprintf(stderr, "malloc(%zu) failed\n", size); exit(3); }
    return mallinfo2().hblks > before;
}

static int threshold_probe(void) {
    size_t initial_low = 0, initial = 0, max_low = 0, max_high = 0;
    for (double s = 64 << 10; s <= (256u << 20); s *= 1.189207115) {
        size_t size = (size_t)s & ~(size_t)4095;
        void *p, *q;
        int first = is_mmapped(size, &p);
        free(p);
        int again = is_mmapped(size, &q);
        free(q);
        if (!first && !initial) initial_low = size;
        if (first && !initial) initial = size;
        if (first && !again) max_low = size;
        if (first && again && !max_high && max_low) max_high = size;
    }
    printf("bench=mmap_threshold abi_bits=%d sizeof_long=%zu initial_low=%zu initial_high=%zu "
           "dynamic_max_low=%zu dynamic_max_high=%zu formula=%zu\n", (int)(8 * sizeof(void *)),
           sizeof(long), initial_low, initial, max_low, max_high, (size_t)4 * 1024 * 1024 * sizeof(long));
    return 0;
}

/* seed 002's Program 2: touch TOTAL bytes through SysV shm segments attached one at a time */
static int shm_bench(long iters, unsigned long long total, size_t seg) {
    int nseg = (int)((total + seg - 1) / seg);
    int *ids = calloc(nseg, sizeof *ids);
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long sum = 0, touched = 0;
    for (int i = 0; i < nseg; i++) {
        ids[i] = shmget(IPC_PRIVATE, seg, IPC_CREAT | 0600);
        if (ids[i] < 0) {
            fprintf(stderr, "shmget segment %d of %zu bytes: %s (kernel.shmmax/shmall?)\n", i, seg, strerror(errno));
            for (int j = 0; j < i; j++) shmctl(ids[j], IPC_RMID, 0);
            return 3;
        }
    }
    double t0 = now();
    for (long r = 0; r < iters; r++) {
        for (int i = 0; i < nseg; i++) { /* write pass: attach, touch every page, detach */
            char *p = shmat(ids[i], 0, 0);
            if (p == (char *)-1) { perror("shmat"); goto out; }
            for (size_t o = 0; o < seg; o += page) p[o] = (char)(i + o / page);
            shmdt(p);
            touched += seg;
        }
        for (int i = 0; i < nseg; i++) { /* read pass: the data survived the detach */
            char *p = shmat(ids[i], 0, 0);
            if (p == (char *)-1) { perror("shmat"); goto out; }
            for (size_t o = 0; o < seg; o += page) sum += (unsigned char)p[o];
            shmdt(p);
        }
    }
out:;
    double t1 = now();
    for (int i = 0; i < nseg; i++) shmctl(ids[i], IPC_RMID, 0);
    char extra[256];
    snprintf(extra, sizeof extra, "segments=%d segment_bytes=%zu total_bytes=%llu touched_bytes=%llu checksum=%llu",
             nseg, seg, (unsigned long long)nseg * seg, touched, sum);
    /* one op = one page written and read back */
    report("shm", (long)(touched / page), t1 - t0, extra);
    return 0;
}

int main(int argc, char **argv) {
    const char *bench = NULL, *dir = ".";
    long iters = 1000000;
    size_t size = 0;
    unsigned long long total = 5ULL << 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bench")) bench = argv[i + 1];
        else if (!strcmp(argv[i], "--iters")) iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--size")) size = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--total")) total = strtoull(argv[i + 1], NULL, 0);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (!bench || iters < 1) {
        fprintf(stderr, "usage: micro --bench NAME --iters N [--dir DIR] [--size B] [--total B]\n");
        return 2;
    }
    double t0, t1;
    if (!strcmp(bench, "getpid")) {
        long s = 0;
        t0 = now();
        for (long i = 0; i < iters; i++) s += syscall(SYS_getpid); /* glibc no longer caches it, but be sure */
        t1 = now();
        BARRIER(s);
    } else if (!strcmp(bench, "call")) {
        long x = 0;
        t0 = now();
        for (long i = 0; i < iters; i++) x = callee(x);
        t1 = now();
        BARRIER(x);
    } else if (!strcmp(bench, "strcpy")) {
        static char src[64] = "the quick brown fox jumps over the lazy dog, 0123456789abcdef", dst[64];
        t0 = now();
        for (long i = 0; i < iters; i++) {
            char *s = src;
            BARRIER(s); /* defeat constant folding of the copy */
            strcpy(dst, s);
            BARRIER(dst);
        }
        t1 = now();
    } else if (!strcmp(bench, "mul64")) {
        uint64_t x = 12345, m = 0x9E3779B97F4A7C15ULL;
        BARRIER(m);
        t0 = now();
        for (long i = 0; i < iters; i++) x = x * m + (uint64_t)i; /* 64-bit: several insns on -m32 */
        t1 = now();
        BARRIER(x);
    } else if (!strcmp(bench, "sin") || !strcmp(bench, "log")) {
        double s = 0;
        int is_sin = bench[0] == 's';
        t0 = now();
        for (long i = 0; i < iters; i++) s += is_sin ? sin((double)i * 1e-3) : log(1.0 + (double)i);
        t1 = now();
        BARRIER(s);
    } else if (!strcmp(bench, "memcpy")) {
        size_t n = size ? size : 4096;
        char *a = malloc(n), *b = malloc(n);
        memset(a, 1, n);
        memset(b, 2, n);
        t0 = now();
        for (long i = 0; i < iters; i++) {
            memcpy(b, a, n);
            BARRIER(b);
        }
        t1 = now();
        char extra[64];
        snprintf(extra, sizeof extra, "size=%zu gb_per_s=%.3f", n, n * iters / (t1 - t0) / 1e9);
        report(bench, iters, t1 - t0, extra);
        return 0;
    } else if (!strncmp(bench, "write", 5) || !strncmp(bench, "fprintf", 7)) {
        return io_bench(bench, iters, dir);
    } else if (!strcmp(bench, "malloc_small") || !strcmp(bench, "malloc_large")) {
        /* glibc starts with M_MMAP_THRESHOLD = 128 KiB but raises it to the size of each mmapped
         * block freed (up to 4*1024*1024*sizeof(long) on 64-bit), so after the first free 1 MiB
         * came from brk: 10,000 iterations made 10,611 brk and 28 mmap calls. Setting the
         * threshold fixes it (and turns the dynamic adjustment off): 64 KiB from the heap (brk),
         * 1 MiB from mmap every time, as the labels say. */
        mallopt(M_MMAP_THRESHOLD, 128 << 10);
        return malloc_bench(bench, iters, size ? size : (bench[7] == 's' ? 64 << 10 : 1 << 20));
    } else if (!strcmp(bench, "mmap_threshold")) {
        return threshold_probe();
    } else if (!strcmp(bench, "shm")) {
        return shm_bench(iters, total, size ? size : 256u << 20);
    } else {
        fprintf(stderr, "unknown bench %s\n", bench);
        return 2;
    }
    report(bench, iters, t1 - t0, "");
    return 0;
}
