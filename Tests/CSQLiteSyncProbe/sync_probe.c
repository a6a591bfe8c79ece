// See sync_probe.h. Each opened file is a ProbeFile followed by the default VFS's own file object; every method
// forwards to it, and xSync of a watched file first takes the probe's rules.
#include "sync_probe.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct ProbeFile {
    sqlite3_file base;
    sqlite3_file *real;
    /// The path it was opened with (NULL for SQLite's nameless temporary files): a file is watched while it
    /// contains the marker, whenever the marker was set.
    char *name;
} ProbeFile;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static char *marker;
static int held;
static int failures;
static long entered;
static long finished;

static sqlite3_vfs *base_vfs;
static sqlite3_vfs probe_vfs;

#define REAL(file) (((ProbeFile *)(file))->real)

static int probe_close(sqlite3_file *file) {
    int rc = REAL(file)->pMethods ? REAL(file)->pMethods->xClose(REAL(file)) : SQLITE_OK;
    free(((ProbeFile *)file)->name);
    ((ProbeFile *)file)->name = NULL;
    return rc;
}
static int probe_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    return REAL(file)->pMethods->xRead(REAL(file), buffer, amount, offset);
}
static int probe_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    return REAL(file)->pMethods->xWrite(REAL(file), buffer, amount, offset);
}
static int probe_truncate(sqlite3_file *file, sqlite3_int64 size) {
    return REAL(file)->pMethods->xTruncate(REAL(file), size);
}
static int probe_sync(sqlite3_file *file, int flags) {
    const char *name = ((ProbeFile *)file)->name;
    pthread_mutex_lock(&lock);
    int watched = name != NULL && marker != NULL && strstr(name, marker) != NULL;
    if (!watched) {
        pthread_mutex_unlock(&lock);
        return REAL(file)->pMethods->xSync(REAL(file), flags);
    }
    entered += 1;
    pthread_cond_broadcast(&changed);
    while (held) pthread_cond_wait(&changed, &lock);
    int fail = failures > 0;
    if (fail) failures -= 1;
    pthread_mutex_unlock(&lock);
    int rc = fail ? SQLITE_IOERR_FSYNC : REAL(file)->pMethods->xSync(REAL(file), flags);
    pthread_mutex_lock(&lock);
    finished += 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return rc;
}
static int probe_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    return REAL(file)->pMethods->xFileSize(REAL(file), size);
}
static int probe_lock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xLock(REAL(file), level); }
static int probe_unlock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xUnlock(REAL(file), level); }
static int probe_check_reserved(sqlite3_file *file, int *out) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), out);
}
static int probe_file_control(sqlite3_file *file, int op, void *arg) {
    return REAL(file)->pMethods->xFileControl(REAL(file), op, arg);
}
static int probe_sector_size(sqlite3_file *file) { return REAL(file)->pMethods->xSectorSize(REAL(file)); }
static int probe_device(sqlite3_file *file) { return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file)); }
static int probe_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    return REAL(file)->pMethods->xShmMap(REAL(file), page, size, extend, out);
}
static int probe_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, n, flags);
}
static void probe_shm_barrier(sqlite3_file *file) { REAL(file)->pMethods->xShmBarrier(REAL(file)); }
static int probe_shm_unmap(sqlite3_file *file, int delete_flag) {
    return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}
static int probe_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    return REAL(file)->pMethods->xFetch(REAL(file), offset, amount, out);
}
static int probe_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    return REAL(file)->pMethods->xUnfetch(REAL(file), offset, page);
}

static const sqlite3_io_methods probe_methods = {
    3,
    probe_close, probe_read, probe_write, probe_truncate, probe_sync, probe_file_size, probe_lock, probe_unlock,
    probe_check_reserved, probe_file_control, probe_sector_size, probe_device, probe_shm_map, probe_shm_lock,
    probe_shm_barrier, probe_shm_unmap, probe_fetch, probe_unfetch,
};

static int probe_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    ProbeFile *probe = (ProbeFile *)file;
    probe->real = (sqlite3_file *)(probe + 1);
    probe->base.pMethods = NULL;
    probe->name = NULL;
    int rc = base_vfs->xOpen(base_vfs, name, probe->real, flags, out_flags);
    if (rc != SQLITE_OK) return rc;
    if (name != NULL && (probe->name = strdup(name)) == NULL) {
        if (probe->real->pMethods) probe->real->pMethods->xClose(probe->real);
        return SQLITE_NOMEM;
    }
    probe->base.pMethods = &probe_methods;
    return SQLITE_OK;
}

static int probe_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs;
    return base_vfs->xDelete(base_vfs, name, sync_dir);
}
static int probe_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return base_vfs->xAccess(base_vfs, name, flags, out);
}
static int probe_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return base_vfs->xFullPathname(base_vfs, name, size, out);
}
static void *probe_dl_open(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return base_vfs->xDlOpen(base_vfs, name);
}
static void probe_dl_error(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    base_vfs->xDlError(base_vfs, size, out);
}
static void (*probe_dl_sym(sqlite3_vfs *vfs, void *handle, const char *name))(void) {
    (void)vfs;
    return base_vfs->xDlSym(base_vfs, handle, name);
}
static void probe_dl_close(sqlite3_vfs *vfs, void *handle) {
    (void)vfs;
    base_vfs->xDlClose(base_vfs, handle);
}
static int probe_randomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return base_vfs->xRandomness(base_vfs, size, out);
}
static int probe_sleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return base_vfs->xSleep(base_vfs, microseconds);
}
static int probe_current_time(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return base_vfs->xCurrentTime(base_vfs, out);
}
static int probe_last_error(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return base_vfs->xGetLastError ? base_vfs->xGetLastError(base_vfs, size, out) : 0;
}
static int probe_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return base_vfs->xCurrentTimeInt64(base_vfs, out);
}

int couchlite_sync_probe_install(void) {
    pthread_mutex_lock(&lock);
    int rc = SQLITE_OK;
    if (base_vfs == NULL) {
        sqlite3_vfs *found = sqlite3_vfs_find(NULL);
        if (found == NULL || found->iVersion < 2) {
            rc = SQLITE_ERROR;
        } else {
            base_vfs = found;
            probe_vfs.iVersion = 2;
            probe_vfs.szOsFile = (int)sizeof(ProbeFile) + found->szOsFile;
            probe_vfs.mxPathname = found->mxPathname;
            probe_vfs.zName = "couchlite-sync-probe";
            probe_vfs.xOpen = probe_open;
            probe_vfs.xDelete = probe_delete;
            probe_vfs.xAccess = probe_access;
            probe_vfs.xFullPathname = probe_full_pathname;
            probe_vfs.xDlOpen = probe_dl_open;
            probe_vfs.xDlError = probe_dl_error;
            probe_vfs.xDlSym = probe_dl_sym;
            probe_vfs.xDlClose = probe_dl_close;
            probe_vfs.xRandomness = probe_randomness;
            probe_vfs.xSleep = probe_sleep;
            probe_vfs.xCurrentTime = probe_current_time;
            probe_vfs.xGetLastError = probe_last_error;
            probe_vfs.xCurrentTimeInt64 = probe_current_time_int64;
            rc = sqlite3_vfs_register(&probe_vfs, 1);
            if (rc != SQLITE_OK) base_vfs = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void couchlite_sync_probe_watch(const char *new_marker) {
    pthread_mutex_lock(&lock);
    free(marker);
    marker = new_marker ? strdup(new_marker) : NULL;
    held = 0;
    failures = 0;
    entered = 0;
    finished = 0;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

void couchlite_sync_probe_hold(int new_held) {
    pthread_mutex_lock(&lock);
    held = new_held;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

void couchlite_sync_probe_fail_next(int count) {
    pthread_mutex_lock(&lock);
    failures = count;
    pthread_mutex_unlock(&lock);
}

long couchlite_sync_probe_entered(void) {
    pthread_mutex_lock(&lock);
    long value = entered;
    pthread_mutex_unlock(&lock);
    return value;
}

long couchlite_sync_probe_finished(void) {
    pthread_mutex_lock(&lock);
    long value = finished;
    pthread_mutex_unlock(&lock);
    return value;
}

int couchlite_sync_probe_wait_entered(long count, int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&lock);
    int rc = 0;
    while (entered < count && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&changed, &lock, &deadline);
    int reached = entered >= count;
    pthread_mutex_unlock(&lock);
    return reached;
}
