#include <stdio.h>
#include <stdlib.h>

long work(long n);

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    printf("sum: %ld\n", work(n));
    return 0;
}
