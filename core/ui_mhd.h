/*
 * ui_mhd.h — libmicrohttpd, loaded when `fsbroker ui` starts rather than
 * linked into every command (docs/decisions.md, "libmicrohttpd is loaded
 * by fsbroker ui alone"): linked, it and the ten libraries it brings
 * (GnuTLS, nettle, gmp, p11-kit, ...) cost each `fsbroker run` about
 * 1.2 ms to load and relocate, for a server only `ui` starts.
 *
 * The functions ui_http.c calls, with the types microhttpd.h gives them.
 */
#ifndef FSB_UI_MHD_H
#define FSB_UI_MHD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

struct fsb_mhd {
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_destroy_response) destroy_response;
	__typeof__(&MHD_lookup_connection_value) lookup_connection_value;
};

/**
 * The library's functions, loaded on the first call (FSB_MHD_SONAME, the
 * soname the build linked against); later calls return the same table.
 * NULL, with a sentence in `err`, when it is not installed or lacks one.
 */
const struct fsb_mhd *fsb_mhd_load(char *err, size_t errlen);

#endif
