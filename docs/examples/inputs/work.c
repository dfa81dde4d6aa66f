#include <stdio.h>
int main(void) {
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < LOOPS; i++) s += i * i;
    printf("%d events\n", 100);
    return 0;
}
