/* An "optimised maths library" sin in the spirit of seed 003's libmopt: branch-free range
   reduction to [-pi, pi] and an odd Taylor polynomial (about 1e-6 absolute accuracy), faster
   than glibc's correctly rounded sin. */
double sin(double x) {
  const double inv_twopi = 0.15915494309189533577, twopi = 6.28318530717958647692;
  double q = x * inv_twopi;
  q -= (double)(long)(q + (q >= 0 ? 0.5 : -0.5));
  double y = q * twopi, y2 = y * y;
  return y * (1.0 + y2 * (-1.0 / 6 + y2 * (1.0 / 120 + y2 * (-1.0 / 5040 + y2 * (1.0 / 362880
         + y2 * (-1.0 / 39916800 + y2 * (1.0 / 6227020800.0 + y2 * (-1.0 / 1307674368000.0))))))));
}
