#ifndef COUCHLITE_CPROCESS_SANDBOX_H
#define COUCHLITE_CPROCESS_SANDBOX_H
// The sandbox every worker (JavaScript's `query-server`, photos' and videos' `media-worker`) enters before it
// reads a request, so that code a stranger's bytes take over (a decoder bug, a Duktape bug) reaches nothing but
// the worker's pipes and the descriptors the server hands it:
//
// 1. no file system: a Landlock domain that handles every file right and grants none (ABI 6 and later also
//    scope signals and abstract Unix sockets to the domain); where the kernel has no Landlock, a chroot into an
//    empty directory that no longer exists (as root, or in a user namespace of its own);
// 2. no identity worth having: started as root, the worker becomes nobody (65534) with no groups;
// 3. an allow-list of system calls (seccomp): memory, threads, time, reading and writing descriptors it already
//    has, receiving descriptors on the one it was given; everything else fails with EPERM (io_uring, ptrace,
//    process_vm_*, execve, bpf, userfaultfd, keyctl, socket and every other way to a network or another
//    process), a new process (clone without CLONE_THREAD) included, and a call through another architecture's
//    entry kills it.
//
// Order matters: Landlock and the chroot cover the calling thread only and `unshare` wants a single thread, so the
// worker enters step 1 and 2 before it starts any thread; seccomp is installed last, on every thread (TSYNC).
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define COUCHLITE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define COUCHLITE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

// Landlock's ABI, defined here as the kernel has it: Debian's headers stop at ABI 2.
#define COUCHLITE_LANDLOCK_CREATE_RULESET 444
#define COUCHLITE_LANDLOCK_RESTRICT_SELF 446
#define COUCHLITE_LANDLOCK_CREATE_RULESET_VERSION 1U
struct couchlite_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

/// How the worker loses its file system: `automatic` is Landlock where the kernel has it, else the chroot.
enum couchlite_confinement { COUCHLITE_CONFINE_AUTOMATIC = 0, COUCHLITE_CONFINE_LANDLOCK = 1, COUCHLITE_CONFINE_CHROOT = 2 };

/// The Landlock ABI this kernel speaks (0 when it has none).
static inline int couchlite_landlock_abi(void) {
    long abi = syscall(COUCHLITE_LANDLOCK_CREATE_RULESET, NULL, 0UL, (unsigned long)COUCHLITE_LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : 0;
}

/// A Landlock domain that handles every file-system right the kernel knows and grants none: no path can be opened,
/// created, removed, renamed, linked, executed or truncated, however it is named. From ABI 4 it also handles TCP
/// bind and connect, from ABI 6 signals and abstract Unix sockets are scoped to the domain. Descriptors opened
/// before stay usable. Needs `no_new_privs`. @return 0, or -1 with errno set.
static inline int couchlite_landlock_everything(void) {
    int abi = couchlite_landlock_abi();
    if (abi < 1) {
        errno = EOPNOTSUPP;
        return -1;
    }
    struct couchlite_landlock_ruleset_attr attr = {.handled_access_fs = (1ULL << 13) - 1, .handled_access_net = 0, .scoped = 0};
    if (abi >= 2) attr.handled_access_fs |= 1ULL << 13;  // REFER
    if (abi >= 3) attr.handled_access_fs |= 1ULL << 14;  // TRUNCATE
    if (abi >= 5) attr.handled_access_fs |= 1ULL << 15;  // IOCTL_DEV
    if (abi >= 4) attr.handled_access_net = 1ULL << 0 | 1ULL << 1;  // BIND_TCP, CONNECT_TCP
    if (abi >= 6) attr.scoped = 1ULL << 0 | 1ULL << 1;  // ABSTRACT_UNIX_SOCKET, SIGNAL
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? offsetof(struct couchlite_landlock_ruleset_attr, scoped)
                                                    : offsetof(struct couchlite_landlock_ruleset_attr, handled_access_net);
    long ruleset = syscall(COUCHLITE_LANDLOCK_CREATE_RULESET, &attr, size, 0UL);
    if (ruleset < 0) return -1;
    long rc = syscall(COUCHLITE_LANDLOCK_RESTRICT_SELF, ruleset, 0UL);
    int saved = errno;
    close((int)ruleset);
    errno = saved;
    return rc == 0 ? 0 : -1;
}

/// The fallback without Landlock: the root of this process becomes an empty directory that is removed at once, so
/// no path resolves to anything and nothing can be created under it. Needs CAP_SYS_CHROOT: as root it has it, else
/// it takes a user namespace of its own (which wants a single-threaded caller). @return 0, or -1 with errno set.
static inline int couchlite_chroot_empty(void) {
    if (geteuid() != 0 && syscall(SYS_unshare, 0x10000000L /* CLONE_NEWUSER */) != 0) return -1;
    char directory[] = "/tmp/couchlite-worker-XXXXXX";
    if (mkdtemp(directory) == NULL) return -1;
    if (chdir(directory) != 0) {
        int saved = errno;
        rmdir(directory);
        errno = saved;
        return -1;
    }
    if (rmdir(directory) != 0 || chroot(".") != 0 || chdir("/") != 0) return -1;
    return 0;
}

/// Started as root (a service, a container), the worker becomes nobody with no supplementary groups; as anyone
/// else it stays who it is (the file system and system calls are what confine it). Raw system calls, as the worker
/// has one thread at this point. @return 0, or -1 with errno set.
static inline int couchlite_drop_root(void) {
    if (geteuid() != 0 && getuid() != 0) return 0;
    const unsigned nobody = 65534;
    if (syscall(SYS_setgroups, 0L, NULL) != 0) return -1;
    if (syscall(SYS_setresgid, (long)nobody, (long)nobody, (long)nobody) != 0) return -1;
    if (syscall(SYS_setresuid, (long)nobody, (long)nobody, (long)nobody) != 0) return -1;
    if (geteuid() == 0 || getuid() == 0) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

// MARK: - The system-call allow-list

#define COUCHLITE_LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define COUCHLITE_LOAD_ARG_LOW(n) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args) + 8 * (n))
#define COUCHLITE_LOAD_ARG_HIGH(n) \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args) + 8 * (n) + 4)
#define COUCHLITE_RETURN(action) BPF_STMT(BPF_RET | BPF_K, (action))
#define COUCHLITE_ALLOW_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), COUCHLITE_RETURN(SECCOMP_RET_ALLOW)
#define COUCHLITE_ERRNO_NR(nr, code) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), COUCHLITE_RETURN(SECCOMP_RET_ERRNO | (code))

/// The namespaces a thread could be created into: never (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID,
/// NEWNET).
#define COUCHLITE_CLONE_NAMESPACES 0x7E020000U

/// Installs the allow-list on every thread of the process (see the top of this file), with `no_new_privs`.
/// `self` is this process's pid: `tgkill` (abort's `raise`) may signal its own threads only. @return 0, or -1
/// with errno set (ENOSYS on an architecture this does not know).
static inline int couchlite_allow_list(pid_t self) {
#ifdef COUCHLITE_AUDIT_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COUCHLITE_AUDIT_ARCH, 1, 0),
        COUCHLITE_RETURN(SECCOMP_RET_KILL_PROCESS),
        COUCHLITE_LOAD_NR,
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),  // __X32_SYSCALL_BIT
        COUCHLITE_RETURN(SECCOMP_RET_KILL_PROCESS),
        // Descriptors it has: the pipes, the file it was handed, stderr.
        COUCHLITE_ALLOW_NR(__NR_read),
        COUCHLITE_ALLOW_NR(__NR_readv),
        COUCHLITE_ALLOW_NR(__NR_pread64),
        COUCHLITE_ALLOW_NR(__NR_preadv),
        COUCHLITE_ALLOW_NR(__NR_write),
        COUCHLITE_ALLOW_NR(__NR_writev),
        COUCHLITE_ALLOW_NR(__NR_lseek),
        COUCHLITE_ALLOW_NR(__NR_close),
        COUCHLITE_ALLOW_NR(__NR_fstat),
        COUCHLITE_ALLOW_NR(__NR_newfstatat),  // glibc's fstat; a path's metadata stays visible (SECURITY.md)
        COUCHLITE_ALLOW_NR(__NR_fcntl),
        COUCHLITE_ALLOW_NR(__NR_dup),
        COUCHLITE_ALLOW_NR(__NR_dup3),
        COUCHLITE_ALLOW_NR(__NR_recvmsg),  // the file descriptors the server passes (SCM_RIGHTS)
        COUCHLITE_ALLOW_NR(__NR_ppoll),
        COUCHLITE_ALLOW_NR(__NR_pselect6),
        COUCHLITE_ALLOW_NR(__NR_epoll_create1),  // Dispatch, should anything start it
        COUCHLITE_ALLOW_NR(__NR_epoll_ctl),
        COUCHLITE_ALLOW_NR(__NR_epoll_pwait),
        COUCHLITE_ALLOW_NR(__NR_eventfd2),
        COUCHLITE_ALLOW_NR(__NR_timerfd_create),
        COUCHLITE_ALLOW_NR(__NR_timerfd_settime),
        COUCHLITE_ALLOW_NR(__NR_timerfd_gettime),
        // Memory.
        COUCHLITE_ALLOW_NR(__NR_brk),
        COUCHLITE_ALLOW_NR(__NR_mmap),
        COUCHLITE_ALLOW_NR(__NR_munmap),
        COUCHLITE_ALLOW_NR(__NR_mremap),
        COUCHLITE_ALLOW_NR(__NR_mprotect),
        COUCHLITE_ALLOW_NR(__NR_madvise),
        // Threads, signals and time.
        COUCHLITE_ALLOW_NR(__NR_futex),
        COUCHLITE_ALLOW_NR(__NR_set_robust_list),
        COUCHLITE_ALLOW_NR(__NR_rseq),
        COUCHLITE_ALLOW_NR(__NR_set_tid_address),
        COUCHLITE_ALLOW_NR(__NR_sched_yield),
        COUCHLITE_ALLOW_NR(__NR_sched_getaffinity),
        COUCHLITE_ALLOW_NR(__NR_getcpu),
        COUCHLITE_ALLOW_NR(__NR_rt_sigaction),
        COUCHLITE_ALLOW_NR(__NR_rt_sigprocmask),
        COUCHLITE_ALLOW_NR(__NR_rt_sigreturn),
        COUCHLITE_ALLOW_NR(__NR_sigaltstack),
        COUCHLITE_ALLOW_NR(__NR_restart_syscall),
        COUCHLITE_ALLOW_NR(__NR_clock_gettime),
        COUCHLITE_ALLOW_NR(__NR_clock_getres),
        COUCHLITE_ALLOW_NR(__NR_clock_nanosleep),
        COUCHLITE_ALLOW_NR(__NR_nanosleep),
        COUCHLITE_ALLOW_NR(__NR_gettimeofday),
        COUCHLITE_ALLOW_NR(__NR_getrandom),
        COUCHLITE_ALLOW_NR(__NR_getpid),
        COUCHLITE_ALLOW_NR(__NR_gettid),
        COUCHLITE_ALLOW_NR(__NR_getppid),  // the watchdog
        COUCHLITE_ALLOW_NR(__NR_getuid),
        COUCHLITE_ALLOW_NR(__NR_geteuid),
        COUCHLITE_ALLOW_NR(__NR_getgid),
        COUCHLITE_ALLOW_NR(__NR_getegid),
        COUCHLITE_ALLOW_NR(__NR_sysinfo),
        COUCHLITE_ALLOW_NR(__NR_uname),
        COUCHLITE_ALLOW_NR(__NR_exit),
        COUCHLITE_ALLOW_NR(__NR_exit_group),
#ifdef __NR_poll
        COUCHLITE_ALLOW_NR(__NR_poll),
        COUCHLITE_ALLOW_NR(__NR_select),
        COUCHLITE_ALLOW_NR(__NR_dup2),
        COUCHLITE_ALLOW_NR(__NR_epoll_wait),
        COUCHLITE_ALLOW_NR(__NR_getrlimit),
        COUCHLITE_ALLOW_NR(__NR_time),
#endif
        // No terminal tricks on an inherited stderr (TIOCSTI): isatty is simply false.
        COUCHLITE_ERRNO_NR(__NR_ioctl, ENOTTY),
        // Paths fail as Landlock would have them fail (the chroot fallback has nothing to open anyway).
        COUCHLITE_ERRNO_NR(__NR_openat, EACCES),
#ifdef __NR_open
        COUCHLITE_ERRNO_NR(__NR_open, EACCES),
#endif
        // glibc falls back to clone, which the filter can read, when clone3 is "not implemented".
        COUCHLITE_ERRNO_NR(__NR_clone3, ENOSYS),
        // clone: threads only (CLONE_THREAD), into no namespace.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 5),
        COUCHLITE_LOAD_ARG_LOW(0),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, COUCHLITE_CLONE_NAMESPACES, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x00010000U, 0, 1),  // CLONE_THREAD
        COUCHLITE_RETURN(SECCOMP_RET_ALLOW),
        COUCHLITE_RETURN(SECCOMP_RET_ERRNO | EPERM),
        // tgkill: its own threads only.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 4),
        COUCHLITE_LOAD_ARG_LOW(0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)self, 0, 1),
        COUCHLITE_RETURN(SECCOMP_RET_ALLOW),
        COUCHLITE_RETURN(SECCOMP_RET_ERRNO | EPERM),
        // prctl: a thread's name (Dispatch names its threads), nothing else.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 5),
        COUCHLITE_LOAD_ARG_LOW(0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_NAME, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_GET_NAME, 0, 1),
        COUCHLITE_RETURN(SECCOMP_RET_ALLOW),
        COUCHLITE_RETURN(SECCOMP_RET_ERRNO | EPERM),
        // prlimit64: reading its own limits (getrlimit), never raising them.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prlimit64, 0, 10),
        COUCHLITE_LOAD_ARG_LOW(0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 7),
        COUCHLITE_LOAD_ARG_HIGH(0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 5),
        COUCHLITE_LOAD_ARG_LOW(2),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3),
        COUCHLITE_LOAD_ARG_HIGH(2),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
        COUCHLITE_RETURN(SECCOMP_RET_ALLOW),
        COUCHLITE_RETURN(SECCOMP_RET_ERRNO | EPERM),
        // Everything else: io_uring_*, ptrace, process_vm_*, execve(at), bpf, userfaultfd, keyctl and add_key,
        // socket(pair), connect, kill, fork, mount, unshare, setns, memfd_create, open_by_handle_at...
        COUCHLITE_RETURN(SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog program = {.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return syscall(__NR_seccomp, (unsigned long)SECCOMP_SET_MODE_FILTER, (unsigned long)SECCOMP_FILTER_FLAG_TSYNC, &program) == 0 ? 0 : -1;
#else
    (void)self;
    errno = ENOSYS;
    return -1;
#endif
}

/// Steps 1 and 2 (see the top of this file), on a single-threaded caller: `no_new_privs`, the file system taken
/// away (`confinement`), root dropped, not dumpable. Writes which step failed into `why` (for the worker's stderr).
/// @return 0, or -1 with errno set.
static inline int couchlite_confine(int confinement, char *why, size_t why_size) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(why, why_size, "no_new_privs");
        return -1;
    }
    int landlock = confinement != COUCHLITE_CONFINE_CHROOT && couchlite_landlock_abi() > 0;
    if (confinement == COUCHLITE_CONFINE_LANDLOCK && !landlock) {
        snprintf(why, why_size, "this kernel has no Landlock");
        errno = EOPNOTSUPP;
        return -1;
    }
    // The chroot first, as it needs root (or a namespace), which the next step gives up.
    if (!landlock && couchlite_chroot_empty() != 0) {
        snprintf(why, why_size, "no Landlock and no chroot (%s)", strerror(errno));
        return -1;
    }
    if (couchlite_drop_root() != 0) {
        snprintf(why, why_size, "cannot stop being root (%s)", strerror(errno));
        return -1;
    }
    if (landlock && couchlite_landlock_everything() != 0) {
        snprintf(why, why_size, "Landlock (%s)", strerror(errno));
        return -1;
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return 0;
}

// MARK: - Escapes, tried by `couchlite sandbox-probe` inside a real worker's sandbox (tests only)

/// Each returns 0 when the escape was refused, or 1 when it worked (and undoes what it could). `target` is a pid
/// (the server's) or a path (a secret), as the escape needs.
static inline int couchlite_escape_io_uring(void) {
    uint32_t params[30];  // struct io_uring_params (120 bytes)
    memset(params, 0, sizeof params);
    long fd = syscall(425 /* io_uring_setup */, 8L, params);
    if (fd >= 0) close((int)fd);
    return fd >= 0;
}

static inline int couchlite_escape_ptrace(pid_t target) {
    long rc = syscall(SYS_ptrace, 16L /* PTRACE_ATTACH */, (long)target, NULL, NULL);
    if (rc == 0) syscall(SYS_ptrace, 17L /* PTRACE_DETACH */, (long)target, NULL, NULL);
    return rc == 0;
}

static inline int couchlite_escape_process_vm_readv(pid_t target, const void *address) {
    char byte;
    struct {
        void *base;
        size_t length;
    } local = {&byte, 1}, remote = {(void *)address, 1};
    return syscall(SYS_process_vm_readv, (long)target, &local, 1UL, &remote, 1UL, 0UL) == 1;
}

static inline int couchlite_escape_execve(void) {
    char *const argv[] = {(char *)"/bin/true", NULL};
    char *const envp[] = {NULL};
    syscall(SYS_execve, "/bin/true", argv, envp);
    return 0;  // never here had it worked: the worker would be /bin/true, and the test sees it answer nothing
}

static inline int couchlite_escape_fork(void) {
    long pid = syscall(SYS_clone, 17L /* SIGCHLD */, 0L, NULL, NULL, 0L);
    if (pid == 0) _exit(0);
    return pid > 0;
}

static inline int couchlite_escape_bpf(void) {
    char attr[128];
    memset(attr, 0, sizeof attr);
    uint32_t *map = (uint32_t *)(void *)attr;
    map[0] = 2;  // BPF_MAP_TYPE_ARRAY
    map[1] = 4;
    map[2] = 4;
    map[3] = 1;
    long fd = syscall(SYS_bpf, 0L /* BPF_MAP_CREATE */, attr, sizeof attr);
    if (fd >= 0) close((int)fd);
    return fd >= 0;
}

static inline int couchlite_escape_userfaultfd(void) {
    long fd = syscall(SYS_userfaultfd, 0L);
    if (fd >= 0) close((int)fd);
    return fd >= 0;
}

static inline int couchlite_escape_keyctl(void) {
    return syscall(SYS_keyctl, 0L /* KEYCTL_GET_KEYRING_ID */, -3L /* KEY_SPEC_SESSION_KEYRING */, 0L) >= 0;
}

static inline int couchlite_escape_socket(void) {
    long fd = syscall(SYS_socket, 2L /* AF_INET */, 1L /* SOCK_STREAM */, 0L);
    if (fd >= 0) close((int)fd);
    long unix_fd = syscall(SYS_socket, 1L /* AF_UNIX */, 1L, 0L);
    if (unix_fd >= 0) close((int)unix_fd);
    return fd >= 0 || unix_fd >= 0;
}

static inline int couchlite_escape_open(const char *path) {
    long fd = syscall(SYS_openat, (long)AT_FDCWD, path, (long)O_RDONLY, 0L);
    if (fd >= 0) close((int)fd);
    return fd >= 0;
}

static inline int couchlite_escape_create(const char *path) {
    long fd = syscall(SYS_openat, (long)AT_FDCWD, path, (long)(O_WRONLY | O_CREAT | O_EXCL), 0600L);
    if (fd >= 0) {
        close((int)fd);
        unlink(path);
    }
    return fd >= 0;
}

static inline int couchlite_escape_kill(pid_t target) { return syscall(SYS_kill, (long)target, 0L) == 0; }

static inline int couchlite_escape_setuid_root(void) { return syscall(SYS_setresuid, 0L, 0L, 0L) == 0; }
#endif
