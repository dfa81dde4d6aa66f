#include <stdio.h>
#include <math.h>
int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "data/input.txt";
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); return 1; }
    unsigned long sum = 0; int c; long n = 0;
    while ((c = fgetc(f)) != EOF) { sum = sum * 31 + (unsigned)c; n++; }
    fclose(f);
    printf("bytes %ld checksum %lu sqrt %.3f\n", n, sum % 1000003, sqrt((double)n));
    return 0;
}
