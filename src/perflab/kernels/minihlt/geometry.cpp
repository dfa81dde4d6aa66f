// Detector description: nested volumes with virtual distance methods (like a Geant4/ROOT
// geometry), built at start from millions of small heap objects linked by pointers, so that the
// pointer size of the ABI (-m64 vs -m32/-mx32) changes the memory footprint.
#include "minihlt.h"

#include <cmath>
#include <cstdlib>

namespace mh {

Volume::~Volume() {}

int64_t snap(double x, double scale) { return std::llround(x * scale); }

Box::Box(Volume* p, int32_t i, int m, const float cc[3], const float hh[3])
    : Volume(p, i, m, 1), calib(nullptr) {
    for (int k = 0; k < 3; ++k) { c[k] = cc[k]; h[k] = hh[k]; }
}

Box::~Box() {
    while (calib) { Calib* n = calib->next; delete calib; calib = n; }
}

double Box::distanceToOut(const double p[3], const double d[3]) const {
    double best = 1e30;
    for (int k = 0; k < 3; ++k) {
        double t;
        if (d[k] > 1e-12) t = ((double)c[k] + h[k] - p[k]) / d[k];
        else if (d[k] < -1e-12) t = ((double)c[k] - h[k] - p[k]) / d[k];
        else continue;
        if (t < best) best = t;
    }
    return best > 0 ? best : 0.0;
}

double Box::safety(const double p[3]) const {
    double s = 1e30;
    for (int k = 0; k < 3; ++k) {
        double v = h[k] - std::fabs(p[k] - c[k]);
        if (v < s) s = v;
    }
    return s > 0 ? s : 0.0;
}

Tube::Tube(Volume* p, int32_t i, int m, int s, double r0, double r1, double hz)
    : Volume(p, i, m, s), rmin(r0), rmax(r1), halfz(hz), nphi(0), nz(0) {
    int64_t a = snap(r0, kPosScale), b = snap(r1, kPosScale);
    rmin2q = a * a;
    rmax2q = b * b;
}

Tube::~Tube() {
    for (Volume* v : sectors) delete v;
}

double Tube::distanceToOut(const double p[3], const double d[3]) const {
    double best = 1e30;
    const double a = d[0] * d[0] + d[1] * d[1];
    if (a > 1e-12) {
        const double b = p[0] * d[0] + p[1] * d[1];
        const double r2 = p[0] * p[0] + p[1] * p[1];
        double disc = b * b - a * (r2 - rmax * rmax);
        if (disc > 0) {
            double t = (-b + std::sqrt(disc)) / a;
            if (t < best) best = t;
        }
        if (rmin > 0 && b < 0) {
            disc = b * b - a * (r2 - rmin * rmin);
            if (disc > 0) {
                double t = (-b - std::sqrt(disc)) / a;
                if (t > 0 && t < best) best = t;
            }
        }
    }
    if (d[2] > 1e-12) {
        double t = (halfz - p[2]) / d[2];
        if (t < best) best = t;
    } else if (d[2] < -1e-12) {
        double t = (-halfz - p[2]) / d[2];
        if (t < best) best = t;
    }
    return best > 0 ? best : 0.0;
}

double Tube::safety(const double p[3]) const {
    double r = std::sqrt(p[0] * p[0] + p[1] * p[1]);
    double s = std::fmin(r - rmin, rmax - r);
    s = std::fmin(s, halfz - std::fabs(p[2]));
    return s > 0 ? s : 0.0;
}

Sector::Sector(Volume* p, int32_t i, int m, double ph0, double dph, double r0, double r1)
    : Volume(p, i, m, 1), phi0(ph0), dphi(dph), rmin(r0), rmax(r1) {}

Sector::~Sector() {
    for (Volume* v : cells) delete v;
}

double Sector::distanceToOut(const double p[3], const double d[3]) const {
    // distance to the two phi planes through the z axis
    double best = 1e30;
    const double planes[2] = {phi0, phi0 + dphi};
    for (double ph : planes) {
        const double nx = -std::sin(ph), ny = std::cos(ph);
        const double dn = d[0] * nx + d[1] * ny;
        if (std::fabs(dn) < 1e-12) continue;
        const double t = -(p[0] * nx + p[1] * ny) / dn;
        if (t > 0 && t < best) best = t;
    }
    return best;
}

double Sector::safety(const double p[3]) const {
    const double r = std::sqrt(p[0] * p[0] + p[1] * p[1]);
    const double phi = std::atan2(p[1], p[0]);
    double dp = std::fmin(std::fabs(phi - phi0), std::fabs(phi0 + dphi - phi));
    return std::fmin(r * std::sin(std::fmin(dp, 1.5)), std::fmin(r - rmin, rmax - r));
}

int Geometry::locate(int64_t xq, int64_t yq, int64_t zq) const {
    const int64_t r2 = xq * xq + yq * yq;
    if (r2 >= rworld2q || zq >= zworldq || zq <= -zworldq) return -1;
    int lo = 0, hi = (int)tubes.size() - 1;
    while (lo < hi) {  // largest tube with rmin2q <= r2 (exact: integers)
        const int mid = (lo + hi + 1) / 2;
        if (tubes[mid]->rmin2q <= r2) lo = mid; else hi = mid - 1;
    }
    return lo;
}

Box* Geometry::cell(const Tube* t, double x, double y, int64_t zq) const {
    // the half-bin offset keeps exact grid points (axes, diagonals) off the bin boundaries
    const double phi = std::atan2(y, x);
    int ip = (int)std::floor((phi + M_PI) * (t->nphi / (2 * M_PI)) + 0.5);
    if (ip >= t->nphi) ip -= t->nphi;
    if (ip < 0) ip = 0;
    const int64_t zspan = 2 * zworldq;
    int iz = (int)(((zq + zworldq) * t->nz) / zspan);
    if (iz >= t->nz) iz = t->nz - 1;
    if (iz < 0) iz = 0;
    const Sector* s = static_cast<const Sector*>(t->sectors[ip]);
    return static_cast<Box*>(s->cells[iz]);
}

Geometry* build_geometry(int static_mb, uint64_t seed) {
    Geometry* g = new Geometry;
    g->rworld = 2000.0;
    g->zworld = 3000.0;
    g->rworld2q = snap(g->rworld, kPosScale) * snap(g->rworld, kPosScale);
    g->zworldq = snap(g->zworld, kPosScale);

    struct L { double r0, r1; int mat; };
    std::vector<L> layers;
    const double trk[8] = {40, 70, 110, 160, 250, 350, 500, 650};
    for (double r : trk) layers.push_back({r, r + 4.0, kSilicon});
    for (int i = 0; i < 12; ++i) layers.push_back({800.0 + 50 * i, 850.0 + 50 * i, kLeadTungstate});
    for (int i = 0; i < 4; ++i) layers.push_back({1500.0 + 110 * i, 1600.0 + 110 * i, kIron});
    g->nsensitive = (int)layers.size();

    // The cell count is a fixed function of --static-mb (never of sizeof), so every ABI builds
    // the same detector; ~200 bytes per cell on -m64 (box + 4 calibration nodes + pointer).
    const long ncells = (long)static_mb * 1048576L / 200;
    const long per_layer = ncells / g->nsensitive > 16 ? ncells / g->nsensitive : 16;
    int nphi = 4;
    while ((long)(2 * nphi) * (2 * nphi) * 2 <= per_layer) nphi *= 2;
    const int nz = (int)(per_layer / nphi);
    g->nphi = nphi;
    g->nz = nz;

    Rng rng(splitmix64(seed ^ 0x67656f6dULL));
    double r = 0.0;
    int32_t id = 0;
    g->ncells = 0;
    g->ncalib = 0;
    int sens = 0;
    for (const L& l : layers) {
        if (l.r0 > r) {
            g->tubes.push_back(new Tube(nullptr, id++, kAir, 0, r, l.r0, g->zworld));
            g->layer_of_tube.push_back(-1);
        }
        Tube* t = new Tube(nullptr, id++, l.mat, 1, l.r0, l.r1, g->zworld);
        t->nphi = nphi;
        t->nz = nz;
        const double dphi = 2 * M_PI / nphi;
        const double rmid = 0.5 * (l.r0 + l.r1), dr = l.r1 - l.r0;
        const double dz = 2 * g->zworld / nz;
        for (int ip = 0; ip < nphi; ++ip) {
            const double phic = -M_PI + ip * dphi;  // bin ip is centred on -pi + ip*dphi
            Sector* s = new Sector(t, id++, l.mat, phic - dphi / 2, dphi, l.r0, l.r1);
            s->cells.reserve(nz);
            const double cs = std::cos(phic), sn = std::sin(phic);
            for (int iz = 0; iz < nz; ++iz) {
                float c[3] = {(float)(rmid * cs), (float)(rmid * sn), (float)(-g->zworld + (iz + 0.5) * dz)};
                float h[3] = {(float)(std::fabs(cs) * dr / 2 + std::fabs(sn) * rmid * dphi / 2),
                              (float)(std::fabs(sn) * dr / 2 + std::fabs(cs) * rmid * dphi / 2),
                              (float)(dz / 2)};
                Box* b = new Box(s, (int32_t)g->ncells, l.mat, c, h);
                for (int ch = 3; ch >= 0; --ch) {
                    Calib* k = new Calib{b->calib, ch, (int32_t)(950 + rng.below(101))};
                    b->calib = k;
                    ++g->ncalib;
                }
                s->cells.push_back(b);
                ++g->ncells;
            }
            t->sectors.push_back(s);
        }
        g->tubes.push_back(t);
        g->layer_of_tube.push_back(sens++);
        r = l.r1;
    }
    g->tubes.push_back(new Tube(nullptr, id++, kAir, 0, r, g->rworld, g->zworld));
    g->layer_of_tube.push_back(-1);
    return g;
}

}  // namespace mh
