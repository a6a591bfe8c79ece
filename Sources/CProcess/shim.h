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
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/// Starts `path` with `argv` (NULL-terminated), its standard input and output the given descriptors, its
/// standard error the caller's and, when `fd3` is not -1, that descriptor as its descriptor 3; every other
/// descriptor is closed in the child (the server's sockets and database files must not live on in a worker), and
/// SIGPIPE is back to its default there. Returns the pid, or -1 with errno set.
static inline pid_t couchlite_spawn(const char *path, char *const argv[], int stdin_fd, int stdout_fd, int fd3) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    if (posix_spawnattr_init(&attributes) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -1;
    }
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    if (fd3 >= 0) posix_spawn_file_actions_adddup2(&actions, fd3, 3);
    posix_spawn_file_actions_addclosefrom_np(&actions, fd3 >= 0 ? 4 : 3);
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
/// worker's system-call allow-list (sandbox.h) has.
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

/// Makes this process one no other process of its user can attach to or read (`ptrace`, `/proc/PID/mem`,
/// `environ`, `process_vm_readv` then need CAP_SYS_PTRACE), nor dump core: so a worker a hostile file took over
/// cannot reach into its server. The process still reads its own `/proc/self`. `exec` sets it back, so it is
/// called after the last one. Returns 0, or -1 with errno set.
static inline int couchlite_refuse_attach(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/// A Unix socket pair whose ends are close-on-exec: the channel on which the server hands a worker the descriptor
/// of the file it is to read (the worker has no file system to open a path in).
static inline int couchlite_descriptor_channel(int fds[2]) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

/// Sends `fd` over `channel` (SCM_RIGHTS, with one byte so the message is never empty). @return 0, or -1 with
/// errno set.
static inline int couchlite_send_descriptor(int channel, int fd) {
    char byte = 'f';
    struct iovec vector = {.iov_base = &byte, .iov_len = 1};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    ssize_t sent;
    do sent = sendmsg(channel, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (sent < 0 && errno == EINTR);
    return sent == 1 ? 0 : -1;
}

/// Waits for the next descriptor on `channel` (blocking). @return it, or -1 with errno set (EBADMSG when a message
/// came without exactly one descriptor; any descriptor it did carry is closed).
static inline int couchlite_receive_descriptor(int channel) {
    char byte;
    struct iovec vector = {.iov_base = &byte, .iov_len = 1};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    ssize_t got;
    do got = recvmsg(channel, &message, 0);
    while (got < 0 && errno == EINTR);
    if (got <= 0) {
        if (got == 0) errno = EPIPE;
        return -1;
    }
    int received = -1, extra = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
            if (received < 0) received = fd;
            else {
                close(fd);
                extra = 1;
            }
        }
    }
    if (received < 0 || extra || (message.msg_flags & MSG_CTRUNC)) {
        if (received >= 0) close(received);
        errno = EBADMSG;
        return -1;
    }
    return received;
}
#endif
