/* perflab spawn server: a small long-lived process that starts and times commands for perflab.
 *
 * Why: a child spawned straight from Python shares Python's address space until exec (vfork),
 * and the kernel folds that mm's peak RSS into the child's ru_maxrss, so every command would
 * "use" at least the harness's memory. Spawning from this tiny process gives the command's own
 * rusage, and it costs no extra exec per run (a per-run trampoline costs ~0.5 ms).
 *
 * fds at start: 0 requests, 1 responses, 2 perflab's stderr, 3 stdout memfd, 4 stderr memfd,
 * 5 /dev/null. A request is a 4-byte native length then NUL-terminated fields:
 *   timeout_ms  cpus(comma list or "")  cwd  stdin_path  capture(0/1)  count  nhealth  health...
 *   journal_path  tag  envc  env...  argc  argv...
 * (envc 0 means: keep this server's environment). The command runs COUNT times back to back;
 * each run answers one line:
 *   R START_NS END_NS STATUS UTIME_US STIME_US MAXRSS_KB MINFLT MAJFLT NVCSW NIVCSW TIMED_OUT
 *     then a tab and the first line of each health file (/proc/stat, PSI...), read right after
 *     the reap, tab-separated (empty where a file cannot be read)
 *   E ERRNO STAGE            (the command could not be started; STAGE names the failing step)
 * A run that fails (non-zero status, a signal, a timeout) ends the batch: its output is still in
 * the memfds when perflab reads them. A capture field "2PATH" (PATH absolute) asks for arrival
 * stamps: stdout then goes through a pipe that the server reads as the command writes it, copying
 * each read into the stdout memfd and appending (bytes so far, CLOCK_MONOTONIC ns) as two native
 * int64s to PATH, so perflab knows when each output line arrived. With a journal path, every R line is first appended to
 * that file as "TAG<tab>INDEX<tab>LINE" before the next run starts: while perflab stores the
 * previous run, the next one is already running, and a kill -9 of perflab still loses at most
 * the run in flight (perflab recovers the journal on resume).
 * Times are CLOCK_MONOTONIC (Python's time.monotonic_ns). The command runs in its own process
 * group with default signal dispositions; SIGTERM to this server kills that group first, and the
 * server gets SIGTERM itself when perflab dies (PR_SET_PDEATHSIG).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static volatile pid_t current = 0;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_term(int sig) {
    (void)sig;
    if (current > 0) kill(-current, SIGKILL);
    _exit(143);
}

static int read_full(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r == 0) return 0;
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 1;
}

static int write_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The first regular, executable PROG on this server's PATH (what execvp would run). */
static int resolve(const char *prog, char *out, size_t cap) {
    const char *path = getenv("PATH");
    if (!path || !*path) return 0;
    for (const char *dir = path; dir;) {
        const char *end = strchr(dir, ':');
        size_t len = end ? (size_t)(end - dir) : strlen(dir);
        /* an empty entry is the current directory, as execvp reads it */
        int n = len ? snprintf(out, cap, "%.*s/%s", (int)len, dir, prog) : snprintf(out, cap, "./%s", prog);
        struct stat st;
        if (n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return 1;
        dir = end ? end + 1 : NULL;
    }
    return 0;
}

static char *next_field(char **p, char *end) {
    char *s = *p;
    if (s >= end) return NULL;
    char *z = memchr(s, '\0', (size_t)(end - s));
    if (!z) return NULL;
    *p = z + 1;
    return s;
}

int main(void) {
    /* Wake up promptly when the command exits, even on a busy machine, so the end timestamp is
     * not delayed by other load: a higher priority (nice -10, where allowed) that
     * SCHED_RESET_ON_FORK keeps from leaking into the command (it starts at nice 0). */
    if (getenv("PERFLAB_SERVER_NICE") == NULL || atoi(getenv("PERFLAB_SERVER_NICE")) != 0) {
        struct sched_param sp = {0};
        if (sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp) == 0) {
            setpriority(PRIO_PROCESS, 0, -10);
        }
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN); /* perflab decides: it sends SIGTERM, which kills the command too */
    signal(SIGTERM, on_term);
    signal(SIGHUP, on_term);
    /* perflab killed (kill -9, OOM) mid-batch: stop too, taking the command with us. */
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) return 0; /* died before the prctl took effect */
    int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (int fd = 3; fd <= 5; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC); /* the command gets them as 1, 2 */
    char *buf = NULL;
    char *journal_path = NULL;
    int journal = -1;
    int health_n = 0, *health = NULL;
    char **health_paths = NULL;
    size_t cap = 0;
    for (;;) {
        uint32_t len;
        if (read_full(0, &len, sizeof len) <= 0) return 0;
        if (len + 1 > cap) {
            cap = len + 1;
            buf = realloc(buf, cap);
            if (!buf) return 1;
        }
        if (read_full(0, buf, len) <= 0) return 0;
        buf[len] = '\0';
        char *p = buf, *stop = buf + len;
        char *f_timeout = next_field(&p, stop), *f_cpus = next_field(&p, stop);
        char *f_cwd = next_field(&p, stop), *f_stdin = next_field(&p, stop);
        char *f_capture = next_field(&p, stop), *f_count = next_field(&p, stop);
        char *f_nhealth = next_field(&p, stop);
        if (!f_nhealth) return 2;
        int nhealth = atoi(f_nhealth);
        /* The health files stay open while requests name the same ones (a study's runs one at
         * a time would otherwise open up to 3 + 3 per CPU files per run). */
        int same = nhealth == health_n;
        char *first_path = p;
        for (int i = 0; i < nhealth; i++) {
            char *hp = next_field(&p, stop);
            if (!hp) return 2;
            if (same && strcmp(hp, health_paths[i]) != 0) same = 0;
        }
        if (!same) {
            for (int i = 0; i < health_n; i++) {
                if (health[i] >= 0) close(health[i]);
                free(health_paths[i]);
            }
            free(health); free(health_paths);
            health_n = nhealth;
            health = calloc((size_t)nhealth + 1, sizeof(int));
            health_paths = calloc((size_t)nhealth + 1, sizeof(char *));
            char *hp = first_path;
            for (int i = 0; i < nhealth; i++) {
                health_paths[i] = strdup(hp);
                health[i] = open(hp, O_RDONLY | O_CLOEXEC);
                hp += strlen(hp) + 1;
            }
        }
        char *f_journal = next_field(&p, stop), *f_tag = next_field(&p, stop);
        char *f_envc = next_field(&p, stop);
        if (!f_envc) return 2;
        if (f_journal[0] && (!journal_path || strcmp(journal_path, f_journal) != 0)) {
            if (journal >= 0) close(journal);
            free(journal_path);
            journal_path = strdup(f_journal);
            journal = open(f_journal, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        }
        int use_journal = f_journal[0] && journal >= 0;
        int envc = atoi(f_envc);
        char **envp = environ;
        char **env_own = NULL;
        if (envc > 0) {
            env_own = calloc((size_t)envc + 1, sizeof(char *));
            for (int i = 0; i < envc; i++) env_own[i] = next_field(&p, stop);
            envp = env_own;
        }
        char *f_argc = next_field(&p, stop);
        if (!f_argc) return 2;
        int argc = atoi(f_argc);
        char **argv = calloc((size_t)argc + 1, sizeof(char *));
        for (int i = 0; i < argc; i++) argv[i] = next_field(&p, stop);
        /* Search PATH once per request, not once per run as execvp does (a dozen failed execs
         * before /usr/bin on a long PATH); execvpe stays the fallback and reports the error. */
        char exe[4096];
        int resolved = argv[0] && strchr(argv[0], '/') == NULL && resolve(argv[0], exe, sizeof exe);
        long timeout_ms = atol(f_timeout);
        cpu_set_t set;
        int pin = f_cpus[0] != '\0';
        if (pin) {
            CPU_ZERO(&set);
            for (char *c = f_cpus; *c;) {
                CPU_SET(atoi(c), &set);
                while (*c && *c != ',') c++;
                if (*c == ',') c++;
            }
        }
        /* the child changes directory only where it must: not into the one the server is in */
        char here[4096];
        int cd = f_cwd[0] && !(getcwd(here, sizeof here) && strcmp(here, f_cwd) == 0);
        int capture = atoi(f_capture);
        const char *stamp_path = capture == 2 ? strchr(f_capture, '/') : NULL;
        long count = atol(f_count);
        if (count < 1) count = 1;
        for (long run = 0; run < count; run++) {
        /* each run's output alone in the memfds (the command's fds share these offsets); an
         * empty one (a quiet command) needs no truncation: one fstat instead of two calls */
        struct stat mst;
        if (capture && (fstat(3, &mst) != 0 || mst.st_size != 0)) { ftruncate(3, 0); lseek(3, 0, SEEK_SET); }
        if (fstat(4, &mst) != 0 || mst.st_size != 0) { ftruncate(4, 0); lseek(4, 0, SEEK_SET); }

        int pipe_fd[2] = {-1, -1}, stamps = -1;
        if (stamp_path && pipe2(pipe_fd, O_CLOEXEC) == 0) {
            stamps = open(stamp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (stamps < 0) { close(pipe_fd[0]); close(pipe_fd[1]); pipe_fd[0] = pipe_fd[1] = -1; }
        }
        /* vfork child: only syscalls and exec; failures go back through shared memory. */
        volatile int child_err = 0;
        volatile int child_stage = 0;
        long long start = now_ns();
        pid_t pid = vfork();
        if (pid == 0) {
            setpgid(0, 0);
            /* ignored dispositions survive exec; caught ones (SIGTERM, SIGHUP) are reset by it */
            signal(SIGPIPE, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            if (pin && sched_setaffinity(0, sizeof set, &set) != 0) {
                child_err = errno; child_stage = 1; _exit(127);
            }
            if (cd && chdir(f_cwd) != 0) { child_err = errno; child_stage = 2; _exit(127); }
            /* no stdin file: /dev/null, opened once by the server (fd 6, close-on-exec) */
            int in = f_stdin[0] ? open(f_stdin, O_RDONLY) : null_in;
            if (in < 0) { child_err = errno; child_stage = 3; _exit(127); }
            dup2(in, 0);
            if (in != null_in) close(in);
            dup2(pipe_fd[1] >= 0 ? pipe_fd[1] : capture ? 3 : 5, 1);
            dup2(4, 2); /* fds 3-5 are close-on-exec: exec closes them, no call here */
            if (resolved) execve(exe, argv, envp);
            execvpe(argv[0], argv, envp);
            child_err = errno;
            child_stage = 4;
            _exit(127);
        }
        char line[8192];
        int n;
        if (pid < 0) {
            if (pipe_fd[0] >= 0) { close(pipe_fd[0]); close(pipe_fd[1]); close(stamps); }
            n = snprintf(line, sizeof line, "E %d 0\n", errno);
            write_all(1, line, (size_t)n);
            break;
        }
        current = pid;
        int status = 0, timed_out = 0;
        struct rusage ru;
        if (pipe_fd[0] >= 0) {
            /* Stamped output: read the pipe as the command writes it until the command exits
             * (pidfd) and the pipe is drained, or the timeout. A grandchild that keeps stdout
             * open does not hold the run: reading stops at the command's exit. */
            close(pipe_fd[1]);
            int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
            long long deadline = timeout_ms >= 0 ? start + timeout_ms * 1000000LL : -1;
            long long total = 0;
            int exited = 0;
            char chunk[65536];
            for (;;) {
                struct pollfd pf[2] = {{pipe_fd[0], POLLIN, 0}, {pfd, POLLIN, 0}};
                int wait_ms = exited ? 0 : deadline < 0 ? 100 : (int)((deadline - now_ns()) / 1000000LL);
                if (!exited && deadline >= 0 && wait_ms <= 0 && !timed_out) {
                    kill(-pid, SIGKILL);
                    timed_out = 1;
                    wait_ms = 100;
                }
                if (wait_ms > 100 || wait_ms < 0) wait_ms = 100;
                int r = poll(pf, pfd >= 0 ? 2 : 1, wait_ms);
                if (r < 0 && errno == EINTR) continue;
                if (pf[0].revents & (POLLIN | POLLHUP)) {
                    ssize_t got = read(pipe_fd[0], chunk, sizeof chunk);
                    if (got > 0) {
                        long long stamp[2];
                        stamp[1] = now_ns();
                        if (capture) write_all(3, chunk, (size_t)got);
                        total += got;
                        stamp[0] = total;
                        write_all(stamps, (const char *)stamp, sizeof stamp);
                        continue;
                    }
                    if (got == 0) break; /* every writer closed stdout */
                }
                if (exited) break; /* exited and nothing left to read */
                if (pfd >= 0 ? (pf[1].revents & POLLIN) != 0 : waitpid(pid, &status, WNOHANG | WNOWAIT) != 0)
                    exited = 1;
            }
            if (pfd >= 0) close(pfd);
            close(pipe_fd[0]);
            close(stamps);
        } else if (timeout_ms >= 0) {
            int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
            if (pfd >= 0) {
                struct pollfd pf = {pfd, POLLIN, 0};
                int r;
                do {
                    r = poll(&pf, 1, (int)timeout_ms);
                } while (r < 0 && errno == EINTR);
                if (r == 0) {
                    kill(-pid, SIGKILL);
                    timed_out = 1;
                }
                close(pfd);
            } else { /* no pidfd: poll the child every millisecond */
                long long deadline = start + timeout_ms * 1000000LL;
                struct timespec ms = {0, 1000000};
                while (waitpid(pid, &status, WNOHANG | WNOWAIT) == 0 && !timed_out) {
                    if (now_ns() >= deadline) {
                        kill(-pid, SIGKILL);
                        timed_out = 1;
                    } else {
                        nanosleep(&ms, NULL);
                    }
                }
            }
        }
        while (wait4(pid, &status, 0, &ru) < 0) {
            if (errno != EINTR) break;
        }
        long long end = now_ns();
        current = 0;
        if (child_stage != 0) {
            n = snprintf(line, sizeof line, "E %d %d\n", child_err, child_stage);
            write_all(1, line, (size_t)n);
            break;
        }
        n = snprintf(line, sizeof line,
                     "R %lld %lld %d %lld %lld %ld %ld %ld %ld %ld %d", start, end, status,
                     (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
                     (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
                     ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw,
                     timed_out);
        for (int i = 0; i < nhealth && n < (int)sizeof line - 2; i++) {
            line[n++] = '\t';
            ssize_t got = health[i] >= 0 ? pread(health[i], line + n, sizeof line - 2 - (size_t)n, 0) : 0;
            for (ssize_t k = 0; k < got; k++) {
                if (line[n + k] == '\n' || line[n + k] == '\t') { got = k; break; }
            }
            if (got > 0) n += (int)got;
        }
        line[n++] = '\n';
        if (use_journal) {
            char head[64];
            int h = snprintf(head, sizeof head, "%ld\t", run);
            struct iovec v[4] = {{f_tag, strlen(f_tag)}, {"\t", 1}, {head, (size_t)h}, {line, (size_t)n}};
            if (writev(journal, v, 4) < 0) use_journal = 0;
        }
        if (write_all(1, line, (size_t)n) < 0) break; /* perflab is gone */
        if (timed_out || status != 0) break; /* a failure ends the batch */
        }
        free(argv);
        free(env_own);
    }
}
