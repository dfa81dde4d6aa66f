/* A float reduction for perflab's variants tests: -ffast-math lets gcc reassociate (vectorise)
   the sum, which changes the rounding and so the printed checksum (seed 003: fast-math changes
   floating-point results). Usage: fmsum [REPS] or fmsum -f FILE (REPS read from FILE). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float x[4096];

int main(int argc, char **argv) {
    long reps = 2000;
    if (argc > 2 && strcmp(argv[1], "-f") == 0) {
        FILE *f = fopen(argv[2], "r");
        if (!f || fscanf(f, "%ld", &reps) != 1) {
            perror(argv[2]);
            return 1;
        }
        fclose(f);
    } else if (argc > 1) {
        reps = atol(argv[1]);
    }
    for (int i = 0; i < 4096; i++) x[i] = 1.0f / (float)(i + 1);
    float s = 0.0f;
    for (long r = 0; r < reps; r++)
        for (int i = 0; i < 4096; i++) s += x[i] * (float)(r & 7);
    printf("checksum: %.9g\n", (double)s);
    return 0;
}
