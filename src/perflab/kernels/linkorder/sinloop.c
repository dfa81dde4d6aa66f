/* Seed 003's library-order example: a loop over sin(). Linked with libmopt.a placed after this
   object, sin comes from the fast archive; placed before it, the archive is skipped and sin
   comes from the system's libm. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000000;
  double s = 0;
  for (long i = 0; i < n; i++) s += sin(i * 1e-3);
  printf("checksum %.6f\n", s);
  return 0;
}
