/* A stand-in for a trigger job, for docs/ci.md: fixed work per event, events/s on stdout.
 * The CI example makes it slower by raising WORK_PER_EVENT, as a real merge request might. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WORK_PER_EVENT 1000000

int main(int argc, char **argv) {
    int events = argc > 1 ? atoi(argv[1]) : 100;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double acc = 0.0;
    for (int e = 0; e < events; e++) {
        unsigned x = 2463534242u + (unsigned)e;
        for (int i = 0; i < WORK_PER_EVENT; i++) {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5;  /* xorshift: a hit to reconstruct */
            acc += (double)(x & 1023) * 1e-3;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("checksum: %.3f\nevents: %d\nevents/s: %.2f\n", acc, events, events / s);
    return 0;
}
