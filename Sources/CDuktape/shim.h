#ifndef COUCHLITE_CDUKTAPE_SHIM_H
#define COUCHLITE_CDUKTAPE_SHIM_H
#include <duktape.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// Duktape's heap allocator with a ceiling: a script that allocates forever gets a RangeError ("alloc failed")
/// from the engine instead of taking the machine's memory. Sizes come from glibc's `malloc_usable_size`, so no
/// header is kept per block. The counters are process-wide: a query-server worker runs one heap.
static size_t couchlite_duk_heap_used = 0;
static size_t couchlite_duk_heap_limit = 0;

static inline void *couchlite_duk_alloc(void *udata, duk_size_t size) {
    (void)udata;
    if (couchlite_duk_heap_limit && couchlite_duk_heap_used + size > couchlite_duk_heap_limit) return NULL;
    void *block = malloc(size);
    if (block) couchlite_duk_heap_used += malloc_usable_size(block);
    return block;
}

static inline void *couchlite_duk_realloc(void *udata, void *ptr, duk_size_t size) {
    (void)udata;
    size_t old = ptr ? malloc_usable_size(ptr) : 0;
    if (couchlite_duk_heap_limit && size > old && couchlite_duk_heap_used + (size - old) > couchlite_duk_heap_limit) {
        return NULL;
    }
    void *block = realloc(ptr, size);
    if (block) {
        couchlite_duk_heap_used = couchlite_duk_heap_used - old + malloc_usable_size(block);
    } else if (size == 0) {
        couchlite_duk_heap_used -= old;
    }
    return block;
}

static inline void couchlite_duk_free(void *udata, void *ptr) {
    (void)udata;
    if (!ptr) return;
    couchlite_duk_heap_used -= malloc_usable_size(ptr);
    free(ptr);
}

/// An error Duktape cannot recover from (none is expected: every call is protected): the worker ends, and
/// the server that spawned it answers the request with an error and starts another.
static inline void couchlite_duk_fatal(void *udata, const char *msg) {
    (void)udata;
    static const char prefix[] = "query server: fatal: ";
    (void)!write(2, prefix, sizeof prefix - 1);
    if (msg) (void)!write(2, msg, strlen(msg));
    (void)!write(2, "\n", 1);
    _exit(70);
}

/// A heap whose allocations stay under `limit` bytes (0: no limit).
static inline duk_context *couchlite_duk_create(size_t limit) {
    couchlite_duk_heap_limit = limit;
    return duk_create_heap(couchlite_duk_alloc, couchlite_duk_realloc, couchlite_duk_free, NULL,
                           couchlite_duk_fatal);
}

static inline size_t couchlite_duk_used_bytes(void) { return couchlite_duk_heap_used; }

/// `duk_peval_lstring` and `duk_pcall` are macros or need flags Swift cannot spell: compiles and runs `source`
/// (named `name` in error messages) in the global scope; 0 on success, the error on the stack otherwise.
static inline duk_int_t couchlite_duk_peval(duk_context *ctx, const char *source, duk_size_t length,
                                            const char *name) {
    duk_push_string(ctx, name);
    duk_int_t rc = duk_pcompile_lstring_filename(ctx, 0, source, length);
    if (rc != 0) return rc;
    return duk_pcall(ctx, 0);
}

/// Pushes a string of `length` bytes (bytes Duktape treats as its internal CESU-8/UTF-8).
static inline void couchlite_duk_push_lstring(duk_context *ctx, const char *bytes, duk_size_t length) {
    duk_push_lstring(ctx, bytes, length);
}

/// Moves the value on top of the stack (the dispatcher) into the heap stash, where scripts cannot reach it.
static inline void couchlite_duk_keep_dispatcher(duk_context *ctx) {
    duk_push_heap_stash(ctx);
    duk_swap_top(ctx, -2);
    duk_put_prop_string(ctx, -2, "couchlite_dispatch");
    duk_pop(ctx);
}

/// Calls the stashed dispatcher with `length` bytes of request text, protected; leaves the result (or the
/// error) on top of the stack.
static inline duk_int_t couchlite_duk_dispatch(duk_context *ctx, const char *bytes, duk_size_t length) {
    duk_push_heap_stash(ctx);
    duk_get_prop_string(ctx, -1, "couchlite_dispatch");
    duk_remove(ctx, -2);
    duk_push_lstring(ctx, bytes, length);
    return duk_pcall(ctx, 1);
}

/// The value on top of the stack as UTF-8 (coerced with ToString, which cannot throw for a string),
/// its length in `*length`; valid until the value is popped.
static inline const char *couchlite_duk_safe_string(duk_context *ctx, duk_size_t *length) {
    return duk_safe_to_lstring(ctx, -1, length);
}
#endif
