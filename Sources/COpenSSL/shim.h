#ifndef COUCHLITE_COPENSSL_SHIM_H
#define COUCHLITE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/bn.h>

// OpenSSL spells much of its API as function-like macros over SSL_CTX_ctrl/BIO_ctrl (or with 64-bit
// shifted constants), which Swift cannot import. These one-line wrappers give them names Swift can call.

/// TLS 1.2 and 1.3 only, no renegotiation, no compression; our cipher order, not the client's (AES-128-GCM
/// first: as safe here and cheaper than AES-256); partial writes (the caller loops) from a buffer that may
/// move between retries; buffers released while idle (thousands of idle connections stay small); read-ahead
/// into a 64 KiB buffer, so a bulk upload costs one recv per few records instead of two per record; an EOF
/// without close_notify reads as end of stream (HTTP framing detects truncation itself).
static inline int couchlite_tls_apply_policy(SSL_CTX *ctx) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return 0;
    if (SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) return 0;
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF
                                 | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                              | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, 64 * 1024);
    return 1;
}

static inline long couchlite_ssl_ctx_set_session_cache_size(SSL_CTX *ctx, long size) {
    return SSL_CTX_sess_set_cache_size(ctx, size);
}

static inline long couchlite_ssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline EVP_PKEY *couchlite_generate_p256_key(void) { return EVP_EC_gen("P-256"); }

static inline long couchlite_bio_mem_contents(BIO *bio, char **pointer) { return BIO_get_mem_data(bio, pointer); }

static inline void couchlite_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void couchlite_bio_set_retry_write(BIO *bio) { BIO_set_retry_write(bio); }
static inline void couchlite_bio_clear_retry(BIO *bio) { BIO_clear_retry_flags(bio); }

static inline int couchlite_x509_name_add_text(X509_NAME *name, const char *field, const char *value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, (const unsigned char *)value, -1, -1, 0);
}

#endif
