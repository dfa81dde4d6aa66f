/* perflab spawn trampoline: optionally wait at the start barrier, then run the command and measure it.
 *
 * usage: perflab-spawnrun BARRIER_FD REPORT_FD PROGRAM [ARGS...]
 *
 * Why a trampoline: a child spawned straight from Python shares Python's address space until
 * exec (vfork), and the kernel folds that mm's peak RSS into the child's ru_maxrss, so every
 * command would "use" at least as much memory as the Python harness. This tiny static program
 * has no such baggage: it posix_spawnp's the command, wait4's it, and reports the command's
 * own rusage, with wall time taken right around spawn..reap.
 *
 * BARRIER_FD (-1: none) is the read end of a pipe whose write end only the parent holds; closing
 * it releases every waiting copy at once (read returns 0). REPORT_FD receives, each in one
 * write (atomic below PIPE_BUF):
 *   S PID RELEASE_NS                      when released (CLOCK_MONOTONIC, as time.monotonic_ns)
 *   R PID START_NS END_NS STATUS UTIME_US STIME_US MAXRSS_KB MINFLT MAJFLT NVCSW NIVCSW
 *   E PID ERRNO                           when the command could not be started
 * The command keeps this process group, so killpg from the parent takes both down.
 * When perflab itself dies (SIGKILL, a crash: no killpg comes), the kernel signals this process
 * (PR_SET_PDEATHSIG), which takes its group down, the command included: no copy runs on after
 * the perflab that measured it (seen: `instances` copies outlived a kill -9).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void put(int fd, const char *line, int len) {
    ssize_t w;
    do {
        w = write(fd, line, (size_t)len);
    } while (w < 0 && errno == EINTR);
}

static void parent_gone(int sig) {
    (void)sig;
    kill(0, SIGKILL); /* this process group: the trampoline and the command it started */
    _exit(137);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: perflab-spawnrun BARRIER_FD REPORT_FD PROGRAM [ARGS...]\n");
        return 127;
    }
    /* SIGUSR2, which nothing else sends here; the command starts with default dispositions
     * (exec resets a caught signal). Only in a group of its own: kill(0) must not reach the
     * parent's group. */
    pid_t parent = getppid();
    if (getpgrp() == getpid()) {
        signal(SIGUSR2, parent_gone);
        prctl(PR_SET_PDEATHSIG, SIGUSR2);
        if (getppid() != parent) parent_gone(0); /* died before the prctl took effect */
    }
    int barrier = atoi(argv[1]);
    int report = atoi(argv[2]);
    char line[256];
    int len;
    if (barrier >= 0) {
        char c;
        ssize_t n;
        do {
            n = read(barrier, &c, 1);
        } while (n < 0 && errno == EINTR);
        close(barrier);
        len = snprintf(line, sizeof line, "S %d %lld\n", (int)getpid(), now_ns());
        put(report, line, len);
    }
    /* The command must not inherit the report pipe: a daemonising grandchild would keep it. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, report);
    pid_t child;
    long long start = now_ns();
    int err = posix_spawnp(&child, argv[3], &fa, NULL, argv + 3, environ);
    if (err != 0) {
        len = snprintf(line, sizeof line, "E %d %d\n", (int)getpid(), err);
        put(report, line, len);
        fprintf(stderr, "perflab: cannot run '%s': %s\n", argv[3], strerror(err));
        return 127;
    }
    int status = 0;
    struct rusage ru;
    while (wait4(child, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            return 126;
        }
    }
    long long end = now_ns();
    len = snprintf(line, sizeof line, "R %d %lld %lld %d %lld %lld %ld %ld %ld %ld %ld\n",
                   (int)getpid(), start, end, status,
                   (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
                   (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
                   ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw);
    put(report, line, len);
    close(report);
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return 128 + WTERMSIG(status);
}
