// minihlt main: load the static data (geometry, field map, tables) once, then process events,
// serially or in forked workers sharing the static data copy-on-write, like the LHCb HLT's
// forked master. Every log line is flushed as it is written.
#include "minihlt.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using namespace mh;

namespace {

struct Options {
    long long events = 100;
    double seconds = 0;   // 0: no time limit
    unsigned long long seed = 1;
    long long event = -1; // --event K: only event K
    long long first = 0;  // --first K: events K .. K+events-1 (disjoint shares for several masters)
    int fork = 0;
    int static_mb = 120;
    bool event_stats = false;
};

struct Partial {  // what a worker sends back through its pipe
    unsigned long long events, accepted, checksum, steps;
};

double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

[[noreturn]] void usage(const char* msg) {
    if (msg) fprintf(stderr, "minihlt: %s\n", msg);
    fprintf(stderr,
            "usage: minihlt [--events N] [--first K] [--seconds S] [--seed N] [--event K] [--fork N]\n"
            "               [--static-mb M] [--event-stats]\n");
    exit(msg ? 2 : 0);
}

long long int_arg(int& i, int argc, char** argv) {
    if (i + 1 >= argc) usage("missing value");
    char* end = nullptr;
    errno = 0;
    long long v = strtoll(argv[++i], &end, 10);
    if (errno || *end || v < 0) usage((std::string("bad value for ") + argv[i - 1]).c_str());
    return v;
}

Options parse(int argc, char** argv) {
    Options o;
    bool events_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--events") { o.events = int_arg(i, argc, argv); events_given = true; }
        else if (a == "--seconds") {
            if (i + 1 >= argc) usage("missing value");
            o.seconds = atof(argv[++i]);
            if (o.seconds <= 0) usage("--seconds must be > 0");
            if (!events_given) o.events = (long long)1 << 60;
        } else if (a == "--seed") o.seed = (unsigned long long)int_arg(i, argc, argv);
        else if (a == "--event") o.event = int_arg(i, argc, argv);
        else if (a == "--first") o.first = int_arg(i, argc, argv);
        else if (a == "--fork") o.fork = (int)int_arg(i, argc, argv);
        else if (a == "--static-mb") o.static_mb = (int)int_arg(i, argc, argv);
        else if (a == "--event-stats") o.event_stats = true;
        else if (a == "-h" || a == "--help") usage(nullptr);
        else usage(("unknown option " + a).c_str());
    }
    if (o.static_mb < 1) o.static_mb = 1;
    return o;
}

// Process events first, first+stride, ... until count or the deadline.
Partial run_events(const Context& ctx, const Options& o, long long first, long long stride, double t0) {
    Partial p{0, 0, 0, 0};
    for (long long ev = o.first + first; ev < o.first + o.events; ev += stride) {
        if (o.seconds > 0 && now() - t0 >= o.seconds) break;
        printf("start processing event #%lld\n", ev);
        const double a = now();
        const EventResult r = process_event(ctx, (uint64_t)ev);
        const double ms = (now() - a) * 1e3;
        printf("done processing event #%lld in %.3f ms\n", ev, ms);
        if (o.event_stats)
            printf("event #%lld: steps %lld hits %lld particles %lld edep_kev %lld accepted %d\n", ev,
                   (long long)r.steps, (long long)r.hits, (long long)r.particles, (long long)r.edep_kev,
                   (int)r.accepted);
        p.events += 1;
        p.accepted += r.accepted;
        p.checksum += r.hash;  // a sum: independent of the order and of the split between workers
        p.steps += (unsigned long long)r.steps;
    }
    return p;
}

void summary(const Partial& p, double secs) {
    // fold the 64-bit sum to 53 bits so that the decimal value is exact as a double metric
    const unsigned long long c = (p.checksum ^ (p.checksum >> 53)) & ((1ULL << 53) - 1);
    printf("events: %llu\n", p.events);
    printf("seconds: %.6f\n", secs);
    printf("events/s: %.4f\n", secs > 0 ? p.events / secs : 0.0);
    printf("accepted: %llu\n", p.accepted);
    printf("steps: %llu\n", p.steps);
    printf("checksum: 0x%014llx (%llu)\n", c, c);
}

}  // namespace

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);  // line-buffered even into a pipe: logs arrive as written
    Options o = parse(argc, argv);

    const double ts = now();
    Context ctx;
    ctx.geo = build_geometry(o.static_mb, 12345);
    ctx.field = build_field();
    ctx.tables = build_tables();
    ctx.seed = o.seed;
    printf("static data loaded: %ld cells, %ld calibration nodes, %d MB requested, in %.3f s\n",
           ctx.geo->ncells, ctx.geo->ncalib, o.static_mb, now() - ts);

    if (o.event >= 0) {  // one event only, for profiling
        Options one = o;
        one.events = o.event + 1;
        one.first = 0;
        one.seconds = 0;
        const double t0 = now();
        Partial p = run_events(ctx, one, o.event, one.events, t0);
        summary(p, now() - t0);
        return 0;
    }

    if (o.fork <= 0) {
        const double t0 = now();
        Partial p = run_events(ctx, o, 0, 1, t0);
        summary(p, now() - t0);
        return 0;
    }

    fflush(stdout);  // nothing buffered may be duplicated into the children
    const int n = o.fork;
    std::vector<int> fds((size_t)n);
    std::vector<pid_t> pids((size_t)n);
    const double t0 = now();
    for (int i = 0; i < n; ++i) {
        int pfd[2];
        if (pipe(pfd) != 0) { perror("minihlt: pipe"); return 1; }
        const pid_t pid = fork();
        if (pid < 0) { perror("minihlt: fork"); return 1; }
        if (pid == 0) {
            close(pfd[0]);
            Partial p = run_events(ctx, o, i, n, t0);
            fflush(stdout);
            ssize_t w = write(pfd[1], &p, sizeof p);
            _exit(w == (ssize_t)sizeof p ? 0 : 3);
        }
        close(pfd[1]);
        fds[(size_t)i] = pfd[0];
        pids[(size_t)i] = pid;
    }
    Partial total{0, 0, 0, 0};
    int failed = 0;
    for (int i = 0; i < n; ++i) {
        Partial p;
        ssize_t got = 0;
        while (got < (ssize_t)sizeof p) {
            const ssize_t r = read(fds[(size_t)i], (char*)&p + got, sizeof p - (size_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += r;
        }
        close(fds[(size_t)i]);
        int status = 0;
        waitpid(pids[(size_t)i], &status, 0);
        if (got != (ssize_t)sizeof p || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "minihlt: worker %d failed (status %d)\n", i, status);
            ++failed;
            continue;
        }
        total.events += p.events;
        total.accepted += p.accepted;
        total.checksum += p.checksum;
        total.steps += p.steps;
    }
    printf("workers: %d\n", n);
    summary(total, now() - t0);
    return failed ? 1 : 0;
}
