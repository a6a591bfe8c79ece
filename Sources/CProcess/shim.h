#ifndef COUCHLITE_CPROCESS_SHIM_H
#define COUCHLITE_CPROCESS_SHIM_H
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/// Starts `path` with `argv` (NULL-terminated), its standard input and output the given descriptors and its
/// standard error the caller's; every other descriptor is closed in the child (the server's sockets and
/// database files must not live on in a worker), and SIGPIPE is back to its default there. Returns the pid,
/// or -1 with errno set.
static inline pid_t couchlite_spawn(const char *path, char *const argv[], int stdin_fd, int stdout_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    if (posix_spawnattr_init(&attributes) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -1;
    }
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, path, &actions, &attributes, argv, NULL);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

/// A pipe whose ends are close-on-exec (`pipe2` needs _GNU_SOURCE, which would change glibc's structs for
/// this module only). Workers are spawned with every other descriptor closed anyway.
static inline int couchlite_pipe(int fds[2]) {
    if (pipe(fds) != 0) return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

/// Caps the calling process's address space and CPU seconds (soft and hard alike; 0 leaves one as it is).
static inline int couchlite_limit_process(unsigned long long address_space, unsigned long long cpu_seconds) {
    struct rlimit limit;
    if (address_space) {
        limit.rlim_cur = limit.rlim_max = address_space;
        if (setrlimit(RLIMIT_AS, &limit) != 0) return -1;
    }
    if (cpu_seconds) {
        limit.rlim_cur = cpu_seconds;
        limit.rlim_max = cpu_seconds + 5;
        if (setrlimit(RLIMIT_CPU, &limit) != 0) return -1;
    }
    return 0;
}

/// The body of `couchlite_watch_server`'s thread: every 100 ms at most, it ends the process at once (no atexit
/// handler, no flushing: the server that would read anything is gone) when the write end of standard input has
/// no holder left or the parent is not `parent` any more. Only `poll`, `getppid` and `exit_group`, which the
/// seccomp filter of `couchlite_deny_network` allows.
static inline void *couchlite_watchdog(void *argument) {
    pid_t parent = (pid_t)(intptr_t)argument;
    for (;;) {
        // No events asked: POLLHUP (the last writer closed, even with bytes still unread) and POLLERR come anyway,
        // and a request waiting to be read does not wake this thread.
        struct pollfd input = {.fd = 0, .events = 0, .revents = 0};
        int ready = poll(&input, 1, 100);
        if (ready > 0 && (input.revents & (POLLHUP | POLLERR | POLLNVAL))) _exit(0);
        if (getppid() != parent) _exit(0);
    }
    return NULL;
}

/// Makes the calling worker process end within 100 ms of its server, however the server ended (`kill -9`
/// included) and whatever the worker's other threads are doing (a script's endless loop, a decoder stuck in a
/// hostile file): a thread of its own, with every signal blocked, watches standard input (the server holds its
/// only write end, so the kernel reports POLLHUP once the server's descriptors are closed, including when that
/// happened before this worker got this far) and the parent pid (`parent`, the server's pid as the server gave
/// it). Not PR_SET_PDEATHSIG: that fires when the *thread* that started the worker ends (a connection's), not
/// the server. Returns 0, or -1 with errno set when the thread cannot be started.
static inline int couchlite_watch_server(pid_t parent) {
    pthread_attr_t attributes;
    int rc = pthread_attr_init(&attributes);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_t thread;
    rc = pthread_create(&thread, &attributes, couchlite_watchdog, (void *)(intptr_t)parent);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

#if defined(__x86_64__)
#define COUCHLITE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define COUCHLITE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/// Takes the network away from the calling process and every thread and child it has or will have: a seccomp
/// filter makes `socket` and `socketpair` fail with EACCES (a worker talks to the server over the pipes it was
/// started with and never needs one), and kills the process on a system call made through another architecture's
/// entry (an i386 `int 0x80`, x32) that could dodge the filter. `no_new_privs` first, as an unprivileged filter
/// requires; it also means no set-uid program run from here gains anything. Returns 0, or -1 with errno set
/// (ENOSYS on an architecture this does not know).
static inline int couchlite_deny_network(void) {
#ifdef COUCHLITE_AUDIT_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COUCHLITE_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), // __X32_SYSCALL_BIT
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) == 0 ? 0 : -1;
#else
    errno = ENOSYS;
    return -1;
#endif
}
#endif
