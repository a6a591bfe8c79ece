#ifndef COUCHLITE_CSQLITE_SHIM_H
#define COUCHLITE_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro cast Swift cannot import; bind through these instead.
static inline int couchlite_bind_text(sqlite3_stmt *s, int i, const char *p, int n) {
    return sqlite3_bind_text(s, i, p, n, SQLITE_TRANSIENT);
}
static inline int couchlite_bind_blob(sqlite3_stmt *s, int i, const void *p, int n) {
    return sqlite3_bind_blob(s, i, p, n, SQLITE_TRANSIENT);
}
/// sqlite3_config is variadic, which Swift cannot call. Turns off SQLite's global memory statistics (a mutex taken
/// around every allocation); only valid before SQLite is initialized, else returns SQLITE_MISUSE and changes nothing.
static inline int couchlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
/// No page-cache memory set aside per connection ahead of use: by default (SQLITE_DEFAULT_PCACHE_INITSZ, 20 pages)
/// each connection's first read allocates room for 20 pages at once, about 86 KB, whether it ever caches them or
/// not; with this every page is allocated when it is first cached. Only valid before SQLite is initialized.
static inline int couchlite_no_page_cache_preallocation(void) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
#endif
