// The trigger decision: branch-heavy pattern logic over the event's hit lists (track
// candidates from tracker layer patterns per phi sector, calorimeter towers, muon coincidences,
// prescales), and the event's hash for the checksum. Only integers enter either, so both are
// identical on every ABI and optimisation level.
#include "minihlt.h"

#include <algorithm>
#include <cstring>

namespace mh {

static inline uint64_t mix(uint64_t h, uint64_t v) { return splitmix64(h ^ (v + 0x9E3779B97F4A7C15ULL + (h << 6))); }

bool trigger_decision(const TriggerInput& in, uint64_t* hash) {
    const Geometry& g = *in.geo;
    const int ntrk = 8, ncalo = 12;
    constexpr int kSectors = 32, kEta = 16;
    uint32_t mask[kSectors];
    std::memset(mask, 0, sizeof mask);
    std::vector<int64_t> towers(kSectors * kEta, 0);
    uint32_t muon_mask = 0;
    int muon_sector_hits[kSectors] = {0};
    uint32_t muon_sector_layers[kSectors] = {0};
    uint64_t h = mix(0x6d696e69686c74ULL, in.event);
    const long per_layer = (long)g.nphi * g.nz;

    for (int l = 0; l < g.nsensitive; ++l) {
        int64_t n = 0, e = 0;
        uint64_t hl = 0;
        for (const Hit* x = (*in.layers)[(size_t)l]; x != nullptr; x = x->next) {
            ++n;
            e += x->edep;
            hl += splitmix64(((uint64_t)(uint32_t)x->cell << 32) ^ (uint32_t)x->edep);
            const long local = x->cell - (long)l * per_layer;
            const int iphi = (int)(local / g.nz), iz = (int)(local % g.nz);
            const int sec = iphi * kSectors / g.nphi;
            if (l < ntrk) {
                if (x->edep > 50) mask[sec] |= 1u << l;  // above the noise threshold
            } else if (l < ntrk + ncalo) {
                towers[(size_t)(sec * kEta + iz * kEta / g.nz)] += x->edep;
            } else if (x->edep > 500) {
                muon_mask |= 1u << (l - ntrk - ncalo);
                ++muon_sector_hits[sec];
                muon_sector_layers[sec] |= 1u << (l - ntrk - ncalo);
            }
        }
        h = mix(h, (uint64_t)n);
        h = mix(h, (uint64_t)e);
        h = mix(h, hl);
    }

    int tracks = 0, tight_tracks = 0;
    for (int s = 0; s < kSectors; ++s) {
        const uint32_t m = mask[s];
        const int pc = __builtin_popcount(m);
        if (pc >= 6) { tracks += 2; ++tight_tracks; }
        else if (pc >= 4) {
            // a candidate needs a hit in an inner pair and an outer pair of layers
            if ((m & 0x3u) && (m & 0xC0u)) ++tracks;
            else if ((m & 0xFu) == 0xFu) ++tracks;
        } else if (pc == 3 && (m & 0x1u) && (m & 0x80u)) {
            ++tracks;  // a long lever arm: accept as a loose candidate
        }
    }
    int64_t calo_e = 0, max_tower = 0;
    int hot = 0, isolated = 0;
    for (int s = 0; s < kSectors; ++s) {
        for (int k = 0; k < kEta; ++k) {
            const int64_t v = towers[(size_t)(s * kEta + k)];
            calo_e += v;
            if (v > max_tower) max_tower = v;
            if (v > 2000000) {
                ++hot;
                // isolation: little energy in the neighbouring towers
                int64_t around = 0;
                for (int ds = -1; ds <= 1; ++ds)
                    for (int dk = -1; dk <= 1; ++dk) {
                        if (!ds && !dk) continue;
                        const int ss = (s + ds + kSectors) % kSectors, kk = k + dk;
                        if (kk < 0 || kk >= kEta) continue;
                        around += towers[(size_t)(ss * kEta + kk)];
                    }
                if (around * 4 < v) ++isolated;
            }
        }
    }
    std::vector<int64_t> sorted(towers);
    std::partial_sort(sorted.begin(), sorted.begin() + 4, sorted.end(), std::greater<int64_t>());
    const int64_t top4 = sorted[0] + sorted[1] + sorted[2] + sorted[3];
    const int muon_layers = __builtin_popcount(muon_mask);
    int muon_sectors = 0;
    int muon_candidates = 0;
    for (int s = 0; s < kSectors; ++s) {
        muon_sectors += muon_sector_hits[s] >= 2;
        // a muon is a clean minimum-ionising track: all four stations, few hits (no punch-through)
        if (muon_sector_layers[s] == 0xFu && muon_sector_hits[s] <= 10) ++muon_candidates;
    }

    bool accept = false;
    int line = 0;
    if (muon_candidates >= 1 && tracks >= 2) { accept = true; line = 1; }                 // single muon
    else if (muon_candidates >= 2 && muon_layers >= 3) { accept = true; line = 2; }        // dimuon
    else if (isolated >= 1 && max_tower > 30000000 && max_tower * 2 > calo_e && tracks >= 1) { accept = true; line = 3; }  // electron
    else if (isolated >= 2 && tracks == 0) { accept = true; line = 4; }                    // diphoton
    else if (hot >= 8 && top4 > 70000000) { accept = true; line = 5; }                    // jets
    else if (tight_tracks >= 10 || tracks >= 20) { accept = true; line = 6; }              // high multiplicity
    else if (calo_e > 300000000 && in.steps > 0) { accept = true; line = 7; }              // total energy
    else if (in.event % 97 == 0) { accept = true; line = 8; }                              // prescaled min bias

    h = mix(h, (uint64_t)in.steps);
    h = mix(h, (uint64_t)in.particles);
    h = mix(h, (uint64_t)in.edep_kev);
    h = mix(h, (uint64_t)(tracks * 1000 + hot * 10 + muon_layers));
    h = mix(h, (uint64_t)line);
    *hash = h;
    return accept;
}

}  // namespace mh
