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

/// Design environments. Each is a Duktape thread made with `duk_push_thread_new_globalenv` (its own global object
/// and its own built-ins), kept alive in the heap stash under `slot`; the environment's script leaves its handler at
/// index 0 of the thread's value stack.
static duk_ret_t couchlite_duk__new_env(duk_context *ctx, void *udata) {
    duk_uarridx_t slot = *(duk_uarridx_t *)udata;
    duk_push_heap_stash(ctx);
    duk_push_thread_new_globalenv(ctx);
    duk_put_prop_index(ctx, -2, slot);
    duk_pop(ctx);
    return 0;
}

/// A list function's `getRow()` talks to the server in the middle of a request: the runtime script hands its message
/// (JSON text) to the native function below, which passes it to the hook the worker installed (it writes the message
/// as a frame and blocks for the server's answer) and returns the answer as a string. The hook returns a `malloc`ed
/// buffer (freed here) and its length, or NULL when the server is gone, which throws inside the script.
typedef char *(*couchlite_duk_exchange_fn)(const char *bytes, size_t length, size_t *reply_length);
static couchlite_duk_exchange_fn couchlite_duk_exchange_hook = NULL;

static inline void couchlite_duk_set_exchange(couchlite_duk_exchange_fn hook) { couchlite_duk_exchange_hook = hook; }

static duk_ret_t couchlite_duk__exchange(duk_context *ctx) {
    duk_size_t length = 0;
    const char *bytes = duk_require_lstring(ctx, 0, &length);
    size_t reply_length = 0;
    char *reply = couchlite_duk_exchange_hook ? couchlite_duk_exchange_hook(bytes, length, &reply_length) : NULL;
    if (!reply) return duk_generic_error(ctx, "the server ended the exchange");
    duk_push_lstring(ctx, reply, reply_length);
    free(reply);
    return 1;
}

/// Defines the global `__couchlite_exchange` in a fresh environment (its runtime script takes it and deletes it
/// before any design function runs).
static duk_ret_t couchlite_duk__install_exchange(duk_context *env, void *udata) {
    (void)udata;
    duk_push_global_object(env);
    duk_push_c_function(env, couchlite_duk__exchange, 1);
    duk_put_prop_string(env, -2, "__couchlite_exchange");
    duk_pop(env);
    return 0;
}

/// Makes the environment `slot` and evaluates `source` in it; returns its context (NULL when the heap is full).
/// `*rc` is 0 when the script ran: its result (the handler) is then at index 0 of the environment's stack;
/// otherwise the error is on top of it and the caller drops the slot.
static inline duk_context *couchlite_duk_env_create(duk_context *ctx, duk_uarridx_t slot, const char *source,
                                                    duk_size_t length, duk_int_t *rc) {
    *rc = duk_safe_call(ctx, couchlite_duk__new_env, &slot, 0, 1);
    duk_pop(ctx);
    if (*rc != 0) return NULL;
    duk_push_heap_stash(ctx);
    duk_get_prop_index(ctx, -1, slot);
    duk_context *env = duk_get_context(ctx, -1);
    duk_pop_2(ctx);
    if (!env) return NULL;
    *rc = duk_safe_call(env, couchlite_duk__install_exchange, NULL, 0, 1);
    if (*rc != 0) return env;
    duk_pop(env);
    *rc = couchlite_duk_peval(env, source, length, "couchlite-design-environment");
    return env;
}

/// Forgets the environment `slot` (its thread, global object and everything its functions kept) and collects it.
static inline void couchlite_duk_env_drop(duk_context *ctx, duk_uarridx_t slot) {
    duk_push_heap_stash(ctx);
    duk_del_prop_index(ctx, -1, slot);
    duk_pop(ctx);
    duk_gc(ctx, 0);
}

struct couchlite_duk_env_args {
    const char *text;
    duk_size_t length;
    const char *extra;
    duk_size_t extra_length;
};

static duk_ret_t couchlite_duk__env_call(duk_context *env, void *udata) {
    struct couchlite_duk_env_args *args = (struct couchlite_duk_env_args *)udata;
    duk_dup(env, 0);
    duk_push_lstring(env, args->text, args->length);
    duk_push_lstring(env, args->extra, args->extra_length);
    duk_call(env, 2);
    return 1;
}

/// Calls the environment's handler with the request text and `extra` (small JSON text), protected; leaves the
/// result (or the error) on top of the environment's stack.
static inline duk_int_t couchlite_duk_env_call(duk_context *env, const char *text, duk_size_t length,
                                               const char *extra, duk_size_t extra_length) {
    struct couchlite_duk_env_args args = {text, length, extra, extra_length};
    return duk_safe_call(env, couchlite_duk__env_call, &args, 0, 1);
}

/// The value on top of the stack as UTF-8 (coerced with ToString, which cannot throw for a string),
/// its length in `*length`; valid until the value is popped.
static inline const char *couchlite_duk_safe_string(duk_context *ctx, duk_size_t *length) {
    return duk_safe_to_lstring(ctx, -1, length);
}
#endif
