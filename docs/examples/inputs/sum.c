#include <stdio.h>
int main(void) {
    double s = 0;
    for (long i = 1; i < 30000000; i++) s += 1.0 / i;
    printf("%.9f\n", s);
    return 0;
}
