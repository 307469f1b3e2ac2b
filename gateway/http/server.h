/*
 * The HTTP server: libmicrohttpd with a thread pool, bounded request bodies
 * and header fields, connection timeouts and limits (in total and per client
 * address), optional native TLS, one JSON log line per request. It hands each
 * request to the REST routes (api.h) or the operations endpoints. It also owns the gRPC
 * listener (grpc_server.h), which shares its metrics, limits and shutdown.
 */
#ifndef WALKLIST_GATEWAY_SERVER_H
#define WALKLIST_GATEWAY_SERVER_H

#include <stdint.h>

#include "export/export_cache.h"
#include "http/cors.h"
#include "walklist/core.h"
#include "walklist/error.h"

typedef struct wl_server wl_server_t;

/* Every number is given, at least 1 (wl_server_start refuses 0 with WL_EINVAL): the defaults
 * are walklistd's, in its option table (config.h). */
typedef struct {
    const char *listen;               /* "host:port", "[v6]:port"; port 0 picks a free port */
    unsigned threads;                 /* request threads: where requests wait for the database */
    unsigned connection_timeout_s;    /* idle connections are closed after this */
    unsigned connection_limit;        /* concurrent connections at most */
    unsigned per_ip_connection_limit; /* concurrent connections per client address */
    unsigned anonymous_limit;         /* requests per minute per address without a valid key */
    unsigned watch_heartbeat_s;       /* WatchStock: a heartbeat after this much silence */
    unsigned watch_stall_s; /* WatchStock: a client taking one message longer is cut off */
    /* Native TLS: both PEM texts (NUL-terminated), or both NULL for plain HTTP. They must
     * stay valid until wl_server_stop. */
    const char *tls_cert_pem; /* the certificate, then any intermediates */
    const char *tls_key_pem;  /* its private key, unencrypted */
    bool tls_1_3_only;        /* refuse TLS 1.2 (default: 1.2 with forward-secret AEAD suites) */
    /* "host:port" of a plain-HTTP listener for /healthz, /readyz, /metrics and the OpenAPI
     * document only, a thread per connection (16 at most): a thread of its own for every
     * request. NULL: none (they are served on listen as well, always). */
    const char *ops_listen;
    /* The stock export's cache (export_cache.h), created and stopped with the server; NULL:
     * none, every export read from the database. */
    const wl_export_cache_config_t *export_cache;
    /* "host:port" of the gRPC listener (grpc_server.h; TLS with the PEM texts above), with
     * grpc_threads workers; NULL: none. */
    const char *grpc_listen;
    unsigned grpc_threads;
    /* Cross-origin requests from browsers (cors.h); NULL: off. Must outlive the server. */
    const wl_cors_t *cors;
} wl_server_config_t;

/*
 * GnuTLS priorities of the TLS listener: TLS 1.3, and TLS 1.2 with forward-secret key exchange
 * (ECDHE) and AEAD ciphers only (AES-GCM, ChaCha20-Poly1305): no RSA key exchange, no CBC, no
 * SHA-1 MACs (Mozilla's "intermediate" profile without finite-field DHE). The server's order
 * wins.
 */
#define WL_SERVER_TLS_PRIORITIES                                                                   \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:"      \
    "+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:%SERVER_PRECEDENCE"
#define WL_SERVER_TLS_1_3_PRIORITIES                                                               \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:"      \
    "%SERVER_PRECEDENCE"

/* Request header fields answered 431 (Google error JSON) by walklistd itself. Header blocks
 * too large for libmicrohttpd's per-connection memory (WL_SERVER_CONNECTION_MEMORY with the
 * request line) are answered by libmicrohttpd before walklistd sees them: 431 with its own HTML
 * body. */
#define WL_SERVER_HEADER_LINE_LIMIT  (16u * 1024) /* one field line, "Name: value" */
#define WL_SERVER_HEADER_BLOCK_LIMIT (32u * 1024) /* every field line together */
/* Each connection's memory for its request line, header fields and the head of its answer:
 * room for a 32 KiB header block, or for the GET form's longest target (200 codes of 64
 * characters, every one percent-encoded, about 38 KB; docs/api.md, "Walk lists"). */
#define WL_SERVER_CONNECTION_MEMORY (64u * 1024)

int wl_server_start(wl_core_t *core, const wl_server_config_t *config, wl_server_t **out,
                    wl_error_t *err) WL_CHECK_RESULT;

/** The port of the operations listener (0: none). */
uint16_t wl_server_ops_port(const wl_server_t *server);

/** The port of the gRPC listener (0: none). */
uint16_t wl_server_grpc_port(const wl_server_t *server);

/** The port actually bound (useful with port 0). */
uint16_t wl_server_port(const wl_server_t *server);

/**
 * Stops accepting connections; from then on every answer carries
 * "Connection: close" and a request arriving on a kept-alive connection is
 * answered 503 without being served. Requests in flight may finish for up to
 * drain_timeout_ms; after that, those that have not reached the database are
 * refused and those at it are still waited for (their commit may be done), and
 * the log says so. Then every connection closes and the server is freed.
 */
void wl_server_stop(wl_server_t *server, int drain_timeout_ms);

#endif
