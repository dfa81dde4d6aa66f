// Physics: cross-section tables, ionisation energy loss with fluctuations, multiple scattering
// (Highland formula), bending in the field and secondary production, in the style of a fast
// simulation. Heavy in libm (log, exp, sqrt, sin, cos), as real transport is.
#include "minihlt.h"

#include <cmath>

namespace mh {

double Rng::gauss() {  // Box-Muller, one value per call (our transform, not std::normal_distribution)
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Rng::exponential() { return -std::log(uniform()); }

int energy_bin(int64_t e) {  // 4 bins per octave of energy in keV, from integer bits only
    if (e < 1) return 0;
    const int lz = 63 - __builtin_clzll((unsigned long long)e);
    int bin = lz >= 2 ? 4 * lz + (int)((e >> (lz - 2)) & 3) : 4 * lz;
    return bin < kEBins ? bin : kEBins - 1;
}

double mass_of(int type) {
    switch (type) {
        case kElectron: return 0.511;
        case kPhoton: return 0.0;
        case kPion: return 139.57;
        default: return 105.66;
    }
}

static double quantize(double v) {  // tables snapped to 2^-30 so ulp noise in libm cannot matter
    return std::ldexp((double)std::llround(std::ldexp(v, 30)), -30);
}

Tables* build_tables() {
    Tables* t = new Tables;
    const double dedx[kNumMaterials] = {0.00025, 0.39, 1.2, 1.15};
    const double x0[kNumMaterials] = {304000.0, 93.7, 8.9, 17.6};
    const double lambda[kNumMaterials] = {750000.0, 465.0, 200.0, 168.0};
    for (int m = 0; m < kNumMaterials; ++m) {
        t->dedx[m] = dedx[m];
        t->x0[m] = x0[m];
        for (int b = 0; b < kEBins; ++b) {
            const double e = std::exp2(b / 4.0) / 1000.0;  // MeV at the bin's lower edge
            const double le = std::log(e > 1e-3 ? e : 1e-3);
            double s[kNumTypes];
            s[kElectron] = (1.0 / x0[m]) * (1.0 - std::exp(-e / 10.0)) * (1.0 + 0.02 * le);
            s[kPhoton] = e > 1.022 ? (7.0 / 9.0) / x0[m] * (1.0 - std::exp(-(e - 1.022) / 5.0)) : 1e-9;
            s[kPion] = (1.0 / lambda[m]) * (1.0 + 0.04 * (le > 0 ? le : 0.0));
            s[kMuon] = (0.05 / x0[m]) * std::log1p(e / 100.0) / (1.0 + std::sqrt(e / 1000.0));
            for (int p = 0; p < kNumTypes; ++p) t->sigma[m][p][b] = quantize(s[p] > 1e-9 ? s[p] : 1e-9);
        }
    }
    return t;
}

double step_length(const Tables& t, Rng& r, int material, int type, int64_t e_kev) {
    return r.exponential() / t.sigma[material][type][energy_bin(e_kev)];
}

double energy_loss(const Tables& t, Rng& r, int material, int type, double e_mev, double step) {
    if (type == kPhoton) return 0.0;
    double mean = t.dedx[material] * step;
    if (type == kElectron) mean *= 1.0 + 0.5 * std::exp(-e_mev / 20.0);
    else mean *= 1.0 + 2.0 * std::exp(-e_mev / 150.0);  // slow hadrons and muons ionise more
    double de = mean * (1.0 + 0.25 * r.gauss());
    if (r.uniform() < 0.05) de += mean * r.exponential();  // a Landau-like tail
    return de > 0 ? de : 0.0;
}

void multiple_scatter(const Tables& t, Rng& r, int material, double e_mev, double mass, double step,
                      double d[3]) {
    const double p = std::sqrt(e_mev * (e_mev + 2 * mass));
    const double beta = p / (e_mev + mass);
    const double x = step / t.x0[material];
    if (x < 1e-9 || p <= 0) return;
    double theta0 = 13.6 / (beta * p) * std::sqrt(x) * (1.0 + 0.038 * std::log(x));
    if (theta0 < 0) theta0 = 0;
    if (theta0 > 1.0) theta0 = 1.0;
    const double theta = theta0 * r.gauss();
    const double phi = 2 * M_PI * r.uniform();
    // an orthonormal basis (u, v) perpendicular to d
    double u[3];
    if (std::fabs(d[2]) < 0.9) { u[0] = -d[1]; u[1] = d[0]; u[2] = 0; }
    else { u[0] = 0; u[1] = -d[2]; u[2] = d[1]; }
    const double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (double& c : u) c /= nu;
    const double v[3] = {d[1] * u[2] - d[2] * u[1], d[2] * u[0] - d[0] * u[2], d[0] * u[1] - d[1] * u[0]};
    const double ct = std::cos(theta), st = std::sin(theta), cp = std::cos(phi), sp = std::sin(phi);
    double n2 = 0;
    for (int k = 0; k < 3; ++k) {
        d[k] = d[k] * ct + (u[k] * cp + v[k] * sp) * st;
        n2 += d[k] * d[k];
    }
    const double inv = 1.0 / std::sqrt(n2);
    for (int k = 0; k < 3; ++k) d[k] *= inv;
}

void bend(const double b[3], int charge, double p_mev, double step, double d[3]) {
    if (charge == 0 || p_mev <= 0) return;
    const double k = 0.299792458 * charge * step / p_mev;  // rad per (T mm) over this step
    const double a = -k * b[2];
    const double ca = std::cos(a), sa = std::sin(a);
    const double dx = d[0] * ca - d[1] * sa, dy = d[0] * sa + d[1] * ca;
    const double dz = d[2];
    // the transverse field components give a small linear kick (d x B)
    double n[3] = {dx - k * dz * b[1], dy + k * dz * b[0], dz + k * (dx * b[1] - dy * b[0])};
    const double inv = 1.0 / std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int i = 0; i < 3; ++i) d[i] = n[i] * inv;
}

static void emit(Rng& r, const Particle& parent, int type, int charge, int64_t e_kev, double spread,
                 std::vector<Particle>& stack, int64_t& local_kev) {
    const int64_t cut = type == kPion ? 30000 : 1500;  // production cuts, keV
    if (e_kev < cut || parent.generation > 40) {
        local_kev += e_kev > 0 ? e_kev : 0;
        return;
    }
    double d[3] = {parent.dx / kDirScale, parent.dy / kDirScale, parent.dz / kDirScale};
    const double s = spread / (1.0 + e_kev / 1.0e6);
    for (double& c : d) c += s * r.gauss();
    const double inv = 1.0 / std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    Particle q = parent;
    q.dx = (int32_t)snap(d[0] * inv, kDirScale);
    q.dy = (int32_t)snap(d[1] * inv, kDirScale);
    q.dz = (int32_t)snap(d[2] * inv, kDirScale);
    q.e = e_kev;
    q.type = (int8_t)type;
    q.charge = (int8_t)charge;
    q.generation = parent.generation + 1;
    stack.push_back(q);
}

bool interact(Rng& r, Particle& p, std::vector<Particle>& stack, int64_t& local_kev) {
    switch (p.type) {
        case kElectron: {  // bremsstrahlung: the electron survives with less energy
            const double f = 0.02 + 0.9 * r.uniform() * r.uniform();
            const int64_t eg = snap(p.e * f, 1.0);
            p.e -= eg;
            emit(r, p, kPhoton, 0, eg, 0.02, stack, local_kev);
            return true;
        }
        case kPhoton: {  // pair production
            const int64_t avail = p.e - 1022;
            if (avail <= 0) { local_kev += p.e; return false; }
            const double f = 0.1 + 0.8 * r.uniform();
            const int64_t e1 = snap(avail * f, 1.0);
            emit(r, p, kElectron, -1, e1, 0.03, stack, local_kev);
            emit(r, p, kElectron, 1, avail - e1, 0.03, stack, local_kev);
            return false;
        }
        case kPion: {  // a hadronic interaction: a few pions and photons from pi0 decays
            int n = 2 + (int)r.below(4);
            if (r.below(16) == 0) n += 6;
            double w[16], sum = 0;
            for (int i = 0; i < n; ++i) { w[i] = r.exponential(); sum += w[i]; }
            const int64_t avail = snap(p.e * 0.75, 1.0);
            local_kev += p.e - avail;  // nuclear binding and slow fragments, deposited here
            int64_t given = 0;
            for (int i = 0; i < n; ++i) {
                const int64_t e = i + 1 == n ? avail - given : snap(avail * (w[i] / sum), 1.0);
                given += e;
                const uint32_t kind = r.below(3);
                if (kind == 0) emit(r, p, kPhoton, 0, e, 0.4, stack, local_kev);
                else emit(r, p, kPion, kind == 1 ? 1 : -1, e, 0.3, stack, local_kev);
            }
            return false;
        }
        default: {  // muon: a delta ray
            const int64_t ed = snap(p.e * 0.01 * r.uniform(), 1.0);
            p.e -= ed;
            emit(r, p, kElectron, -1, ed, 0.2, stack, local_kev);
            return true;
        }
    }
}

}  // namespace mh
