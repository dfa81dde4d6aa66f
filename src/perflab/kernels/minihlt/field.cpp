// Magnetic field map: a 3-D grid of (Bx, By, Bz) in tesla with trilinear interpolation, like
// the field service of a reconstruction job. The grid spacing is a power of two so that the
// cell index of a grid-snapped position is exact on every ABI.
#include "minihlt.h"

#include <cmath>

namespace mh {

FieldMap* build_field() {
    FieldMap* f = new FieldMap;
    const double spacing = 64.0;  // mm
    f->inv = 1.0 / spacing;
    f->x0 = -2048.0;
    f->y0 = -2048.0;
    f->z0 = -3072.0;
    f->nx = 65;
    f->ny = 65;
    f->nz = 97;
    f->b.resize((size_t)f->nx * f->ny * f->nz * 3);
    for (int k = 0; k < f->nz; ++k) {
        const double z = f->z0 + k * spacing;
        for (int j = 0; j < f->ny; ++j) {
            const double y = f->y0 + j * spacing;
            for (int i = 0; i < f->nx; ++i) {
                const double x = f->x0 + i * spacing;
                const double r = std::sqrt(x * x + y * y);
                // a solenoid: 2 T inside r < 750 mm, a return field in the iron, fringe at the ends
                const double inner = 2.0 / (1.0 + std::exp((r - 750.0) / 40.0));
                const double ret = -1.2 * std::exp(-0.5 * std::pow((r - 1700.0) / 250.0, 2));
                const double ends = 1.0 / (1.0 + std::exp((std::fabs(z) - 2600.0) / 120.0));
                const double bz = (inner + ret) * ends + 0.01 * std::sin(z / 300.0) * std::cos(r / 500.0);
                const double br = 0.15 * inner * std::tanh(z / 1500.0) * (1.0 - ends);
                const double phi = std::atan2(y, x);
                float* v = &f->b[(((size_t)k * f->ny + j) * f->nx + i) * 3];
                v[0] = (float)(br * std::cos(phi));
                v[1] = (float)(br * std::sin(phi));
                v[2] = (float)bz;
            }
        }
    }
    return f;
}

void FieldMap::field(const double p[3], double out[3]) const {
    const double fx = (p[0] - x0) * inv, fy = (p[1] - y0) * inv, fz = (p[2] - z0) * inv;
    int i = (int)std::floor(fx), j = (int)std::floor(fy), k = (int)std::floor(fz);
    if (i < 0 || j < 0 || k < 0 || i >= nx - 1 || j >= ny - 1 || k >= nz - 1) {
        out[0] = out[1] = out[2] = 0.0;
        return;
    }
    const double u = fx - i, v = fy - j, w = fz - k;
    const size_t sx = 3, sy = (size_t)nx * 3, sz = (size_t)nx * ny * 3;
    const float* c = &b[(size_t)k * sz + (size_t)j * sy + (size_t)i * sx];
    for (int a = 0; a < 3; ++a) {
        const double c00 = c[a] * (1 - u) + c[sx + a] * u;
        const double c10 = c[sy + a] * (1 - u) + c[sy + sx + a] * u;
        const double c01 = c[sz + a] * (1 - u) + c[sz + sx + a] * u;
        const double c11 = c[sz + sy + a] * (1 - u) + c[sz + sy + sx + a] * u;
        const double c0 = c00 * (1 - v) + c10 * v;
        const double c1 = c01 * (1 - v) + c11 * v;
        out[a] = c0 * (1 - w) + c1 * w;
    }
}

}  // namespace mh
