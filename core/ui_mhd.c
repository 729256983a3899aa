/*
 * ui_mhd.c — libmicrohttpd's functions looked up in the library, loaded
 * on first use (ui_mhd.h).
 */
#include "ui_mhd.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

#ifndef FSB_MHD_SONAME
#define FSB_MHD_SONAME "libmicrohttpd.so.12"
#endif

static struct fsb_mhd mhd;
static bool loaded;

/* One symbol into `slot`: false, with the sentence, when it is missing. */
static bool bind_symbol(void *lib, const char *name, void *slot, char *err, size_t errlen)
{
	void *sym = dlsym(lib, name);

	if (sym == NULL) {
		snprintf(err, errlen, "%s has no %s: %s", FSB_MHD_SONAME, name, dlerror());
		return false;
	}
	/* POSIX: a function pointer converts to and from void *. */
	*(void **)slot = sym;
	return true;
}

const struct fsb_mhd *fsb_mhd_load(char *err, size_t errlen)
{
	struct fsb_mhd m;
	void *lib;

	if (loaded)
		return &mhd;
	lib = dlopen(FSB_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		snprintf(err, errlen, "cannot load libmicrohttpd (%s), which fsbroker ui serves "
			 "its page with: %s (on Debian: apt install libmicrohttpd12)",
			 FSB_MHD_SONAME, dlerror());
		return NULL;
	}
	if (!bind_symbol(lib, "MHD_start_daemon", &m.start_daemon, err, errlen) ||
	    !bind_symbol(lib, "MHD_stop_daemon", &m.stop_daemon, err, errlen) ||
	    !bind_symbol(lib, "MHD_create_response_from_buffer", &m.create_response_from_buffer,
			 err, errlen) ||
	    !bind_symbol(lib, "MHD_add_response_header", &m.add_response_header, err, errlen) ||
	    !bind_symbol(lib, "MHD_queue_response", &m.queue_response, err, errlen) ||
	    !bind_symbol(lib, "MHD_destroy_response", &m.destroy_response, err, errlen) ||
	    !bind_symbol(lib, "MHD_lookup_connection_value", &m.lookup_connection_value, err,
			 errlen)) {
		dlclose(lib);
		return NULL;
	}
	/* Kept loaded for the life of the process. */
	mhd = m;
	loaded = true;
	return &mhd;
}
