#include <stdio.h>
int main(void) {
    unsigned char b = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) { if (fread(&b, 1, 1, f) != 1) b = 0; fclose(f); }
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < 1000UL * b; i++) s += i * i;
    printf("%d events\n", 100);
    return 0;
}
