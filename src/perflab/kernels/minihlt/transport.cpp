// Event generation and stepping transport: the event loop's hot path. Each step locates the
// volume (integer radius search), asks the volumes for their distance to out (virtual calls),
// samples the physics step, bends in the field, scatters, loses energy, may make secondaries,
// and records calibrated hits in heap-allocated linked lists.
#include "minihlt.h"

#include <cmath>
#include <cstdint>

namespace mh {

void generate(const Context& ctx, uint64_t event, Rng& r, std::vector<Particle>& stack) {
    (void)ctx;
    (void)event;
    // Heavy-tailed multiplicity from integer bits only: a geometric "pile-up" level gives a few
    // events with many times the median number of primaries, as in real data.
    int tail = __builtin_ctzll(r.next() | (1ULL << 7));
    int n = 4 + (int)r.below(6);
    if (tail >= 4) n += (3 << tail) / 2;
    for (int i = 0; i < n; ++i) {
        Particle p;
        const uint32_t kind = r.below(100);
        p.type = (int8_t)(kind < 45 ? kPion : kind < 71 ? kElectron : kind < 97 ? kPhoton : kMuon);
        p.charge = (int8_t)(p.type == kPhoton ? 0 : (r.below(2) ? 1 : -1));
        p.e = ((int64_t)1000000 << r.below(6)) + (int64_t)r.below(1000000);
        if (p.type == kMuon) p.e += 2000000;
        const double ct = -0.95 + 1.9 * r.uniform();
        const double st = std::sqrt(1.0 - ct * ct);
        const double phi = 2 * M_PI * r.uniform();
        p.dx = (int32_t)snap(st * std::cos(phi), kDirScale);
        p.dy = (int32_t)snap(st * std::sin(phi), kDirScale);
        p.dz = (int32_t)snap(ct, kDirScale);
        p.x = (int64_t)r.below(64) - 32;
        p.y = (int64_t)r.below(64) - 32;
        p.z = (int64_t)r.below(6400) - 3200;
        p.generation = 0;
        stack.push_back(p);
    }
}

static inline int64_t tracking_cut(int type) {
    switch (type) {
        case kElectron: return 1000;
        case kPhoton: return 1000;
        case kPion: return 20000;
        default: return 50000;
    }
}

EventResult process_event(const Context& ctx, uint64_t event) {
    const Geometry& geo = *ctx.geo;
    const Tables& tab = *ctx.tables;
    Rng r(splitmix64(ctx.seed * 0x9E3779B97F4A7C15ULL) ^ splitmix64(event + 0x5151));
    std::vector<Particle> stack;
    stack.reserve(256);
    generate(ctx, event, r, stack);

    std::vector<Hit*> layers((size_t)geo.nsensitive, nullptr);
    int64_t steps = 0, nhits = 0, particles = 0, edep = 0;
    while (!stack.empty()) {
        Particle p = stack.back();
        stack.pop_back();
        ++particles;
        const double mass = mass_of(p.type);
        bool alive = true;
        for (int nstep = 0; alive && nstep < 4000; ++nstep) {
            const int ti = geo.locate(p.x, p.y, p.z);
            if (ti < 0) break;  // left the world: the rest of the energy escapes
            ++steps;
            const Tube* t = geo.tubes[(size_t)ti];
            const int mat = t->material;
            double pos[3] = {p.x / kPosScale, p.y / kPosScale, p.z / kPosScale};
            double d[3] = {p.dx / kDirScale, p.dy / kDirScale, p.dz / kDirScale};
            const double dn = 1.0 / std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            for (double& c : d) c *= dn;

            double s_geo = t->distanceToOut(pos, d);
            Box* cell = nullptr;
            const int layer = geo.layer_of_tube[(size_t)ti];
            if (layer >= 0) {
                cell = geo.cell(t, pos[0], pos[1], p.z);
                const double sc = cell->distanceToOut(pos, d);
                if (sc < s_geo) s_geo = sc;
            }
            s_geo += 0.05;  // push across the boundary
            const double s_phys = step_length(tab, r, mat, p.type, p.e);
            bool interacts = s_phys < s_geo;
            double s = interacts ? s_phys : s_geo;
            if (s > 200.0) { s = 200.0; interacts = false; }  // bound the field-integration step

            const double e_mev = p.e / 1000.0;
            if (p.charge != 0) {
                double b[3];
                ctx.field->field(pos, b);
                bend(b, p.charge, std::sqrt(e_mev * (e_mev + 2 * mass)), s, d);
                multiple_scatter(tab, r, mat, e_mev, mass, s, d);
            }
            int64_t dek = snap(energy_loss(tab, r, mat, p.type, e_mev, s) * 1000.0, 1.0);
            if (dek > p.e) dek = p.e;
            p.e -= dek;
            p.x = snap(pos[0] + d[0] * s, kPosScale);
            p.y = snap(pos[1] + d[1] * s, kPosScale);
            p.z = snap(pos[2] + d[2] * s, kPosScale);
            p.dx = (int32_t)snap(d[0], kDirScale);
            p.dy = (int32_t)snap(d[1], kDirScale);
            p.dz = (int32_t)snap(d[2], kDirScale);

            int64_t local = 0;
            if (interacts && p.e > 0) alive = interact(r, p, stack, local);
            int64_t dep = dek + local;
            if (alive && p.e < tracking_cut(p.type)) {
                dep += p.e;
                alive = false;
            }
            edep += dep;
            if (cell != nullptr && dep > 0) {
                // calibration: walk the cell's channel list (pointer chasing through static data)
                const int ch = (int)(steps & 3);
                const Calib* c = cell->calib;
                while (c->next != nullptr && c->channel != ch) c = c->next;
                int64_t cal = dep * c->gain_permille / 1000;
                if (cal > INT32_MAX) cal = INT32_MAX;
                layers[(size_t)layer] = new Hit{layers[(size_t)layer], cell->id, (int32_t)cal, nstep};
                ++nhits;
            }
        }
    }

    TriggerInput in{&geo, &layers, steps, particles, edep, event};
    EventResult res;
    res.accepted = trigger_decision(in, &res.hash);
    res.steps = steps;
    res.hits = nhits;
    res.particles = particles;
    res.edep_kev = edep;
    for (Hit* h : layers) {
        while (h) { Hit* n = h->next; delete h; h = n; }
    }
    return res;
}

}  // namespace mh
