// minihlt: a small event-processing program shaped like an HLT / simulation job.
// Shared declarations. The hot path is spread over several translation units on purpose
// (geometry.cpp, field.cpp, physics.cpp, transport.cpp, trigger.cpp) so that LTO and PGO
// have cross-unit inlining and layout work to do.
#ifndef MINIHLT_H
#define MINIHLT_H

#include <cstdint>
#include <cstddef>
#include <vector>

namespace mh {

// ---- deterministic random numbers: our own generator and transforms, never std:: distributions,
// whose results differ between library versions.
static inline uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

struct Rng {
    uint64_t s[4];
    explicit Rng(uint64_t seed) {
        uint64_t x = seed;
        for (int i = 0; i < 4; ++i) { x = splitmix64(x); s[i] = x; }
    }
    static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    inline uint64_t next() {  // xoshiro256**
        const uint64_t r = rotl(s[1] * 5, 7) * 9;
        const uint64_t t = s[1] << 17;
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
        s[2] ^= t; s[3] = rotl(s[3], 45);
        return r;
    }
    // uniform in (0, 1): exact (53-bit integer times a power of two), never 0
    inline double uniform() { return ((next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
    inline uint32_t below(uint32_t n) { return (uint32_t)(((next() >> 32) * (uint64_t)n) >> 32); }
    double gauss();        // Box-Muller with libm (physics.cpp)
    double exponential();  // -log(u)
};

// ---- fixed-point state: every quantity that decides anything is snapped to a grid after each
// step, so that ulp-level differences (x87 vs SSE libm, FMA contraction, -O levels) almost
// never change a decision or the checksum.
constexpr double kPosScale = 64.0;        // positions in 1/64 mm
constexpr double kDirScale = 1048576.0;   // direction cosines in 2^-20
constexpr int64_t kKeV = 1;               // energies in keV (integers)

int64_t snap(double x, double scale);

// ---- static data -------------------------------------------------------------------------
struct Calib {  // a readout channel's calibration: a small linked object, like conditions data
    Calib* next;
    int32_t channel;
    int32_t gain_permille;
};

class Volume {
public:
    Volume* parent;
    int32_t id;
    int16_t material;
    int16_t sensitive;
    Volume(Volume* p, int32_t i, int m, int s) : parent(p), id(i), material((int16_t)m), sensitive((int16_t)s) {}
    virtual ~Volume();
    // distance along unit direction d from point p (mm) to this volume's boundary
    virtual double distanceToOut(const double p[3], const double d[3]) const = 0;
    virtual double safety(const double p[3]) const = 0;
};

class Box : public Volume {  // a readout cell
public:
    float c[3], h[3];
    Calib* calib;
    Box(Volume* p, int32_t i, int m, const float cc[3], const float hh[3]);
    ~Box() override;
    double distanceToOut(const double p[3], const double d[3]) const override;
    double safety(const double p[3]) const override;
};

class Tube : public Volume {  // a layer (or an air gap) between two radii
public:
    double rmin, rmax, halfz;
    int64_t rmin2q, rmax2q;  // squared radii on the position grid, for exact integer location
    int nphi, nz;
    std::vector<Volume*> sectors;  // nphi sectors, each a Sector with nz cells
    Tube(Volume* p, int32_t i, int m, int s, double r0, double r1, double hz);
    ~Tube() override;
    double distanceToOut(const double p[3], const double d[3]) const override;
    double safety(const double p[3]) const override;
};

class Sector : public Volume {
public:
    double phi0, dphi, rmin, rmax;
    std::vector<Volume*> cells;
    Sector(Volume* p, int32_t i, int m, double ph0, double dph, double r0, double r1);
    ~Sector() override;
    double distanceToOut(const double p[3], const double d[3]) const override;
    double safety(const double p[3]) const override;
};

struct Geometry {
    double rworld, zworld;
    int64_t rworld2q, zworldq;
    std::vector<Tube*> tubes;  // contiguous in radius: gaps and layers alternate
    int nsensitive;            // number of sensitive layers
    int nphi, nz;              // cells per sensitive layer: nphi sectors x nz cells
    std::vector<int> layer_of_tube;  // sensitive layer index or -1
    long ncells, ncalib;
    // find the tube containing grid position (xq, yq); -1 outside the world
    int locate(int64_t xq, int64_t yq, int64_t zq) const;
    // find the cell inside a sensitive tube
    Box* cell(const Tube* t, double x, double y, int64_t zq) const;
};

Geometry* build_geometry(int static_mb, uint64_t seed);

struct FieldMap {
    int nx, ny, nz;
    double x0, y0, z0, inv;  // grid origin and inverse spacing (a power of two: exact)
    std::vector<float> b;    // (bx, by, bz) per node
    void field(const double p[3], double out[3]) const;
};
FieldMap* build_field();

// ---- materials and cross sections --------------------------------------------------------
enum Material { kAir = 0, kSilicon = 1, kLeadTungstate = 2, kIron = 3, kNumMaterials = 4 };
enum PType { kElectron = 0, kPhoton = 1, kPion = 2, kMuon = 3, kNumTypes = 4 };
constexpr int kEBins = 128;

struct Tables {
    // interaction cross section (1/mm), per material, particle type and energy bin
    double sigma[kNumMaterials][kNumTypes][kEBins];
    double dedx[kNumMaterials];  // MeV/mm
    double x0[kNumMaterials];    // radiation length, mm
};
Tables* build_tables();
int energy_bin(int64_t e_kev);

// ---- per event ---------------------------------------------------------------------------
struct Particle {
    int64_t x, y, z;       // position, 1/64 mm
    int32_t dx, dy, dz;    // direction, 2^-20
    int64_t e;             // kinetic energy, keV
    int8_t type, charge;
    int32_t generation;
};

struct Hit {  // heap-allocated, linked per layer
    Hit* next;
    int32_t cell;
    int32_t edep;  // keV after calibration
    int32_t step;
};

struct EventResult {
    uint64_t hash;
    int64_t steps, hits, particles, edep_kev;
    bool accepted;
};

struct Context {
    const Geometry* geo;
    const FieldMap* field;
    const Tables* tables;
    uint64_t seed;
};

// physics.cpp
double step_length(const Tables& t, Rng& r, int material, int type, int64_t e_kev);
double energy_loss(const Tables& t, Rng& r, int material, int type, double e_mev, double step);
void multiple_scatter(const Tables& t, Rng& r, int material, double e_mev, double mass, double step, double d[3]);
void bend(const double b[3], int charge, double p_mev, double step, double d[3]);
bool interact(Rng& r, Particle& p, std::vector<Particle>& stack, int64_t& local_kev);
double mass_of(int type);

// transport.cpp
void generate(const Context& ctx, uint64_t event, Rng& r, std::vector<Particle>& stack);
EventResult process_event(const Context& ctx, uint64_t event);

// trigger.cpp
struct TriggerInput {
    const Geometry* geo;
    std::vector<Hit*>* layers;  // per sensitive layer
    int64_t steps, particles, edep_kev;
    uint64_t event;
};
bool trigger_decision(const TriggerInput& in, uint64_t* hash);

}  // namespace mh
#endif
