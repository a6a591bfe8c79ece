// A test-only SQLite VFS that sits over the default one and lets a test hold, count or fail the `xSync` calls of
// the files whose path contains a marker (a test's own temporary directory): how RevTreeTests show that no reader
// sees a commit before SQLite has synced it. Every other file passes straight through.
#ifndef COUCHLITE_SYNC_PROBE_H
#define COUCHLITE_SYNC_PROBE_H

/// Registers the probe as the default VFS (once; later calls do nothing). Returns 0 or an SQLite error code.
int couchlite_sync_probe_install(void);

/// Watches the files whose path contains `marker` (copied; at most one marker at a time, NULL stops watching)
/// and resets the counters.
void couchlite_sync_probe_watch(const char *marker);

/// While held, a watched file's sync waits (after counting itself as entered) until released.
void couchlite_sync_probe_hold(int held);

/// The next `count` watched syncs fail with SQLITE_IOERR_FSYNC without syncing.
void couchlite_sync_probe_fail_next(int count);

/// Watched syncs that began, and that finished (synced or failed), since `watch`.
long couchlite_sync_probe_entered(void);
long couchlite_sync_probe_finished(void);

/// Blocks until at least `count` watched syncs have begun, or `timeout_ms` passed. Returns 1 if they did.
int couchlite_sync_probe_wait_entered(long count, int timeout_ms);

#endif
