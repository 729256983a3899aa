/*
 * ui_page.h — the page `fsbroker ui` serves, ui/index.html, as bytes built
 * into the binary (core/ui_page.c).
 */
#ifndef FSB_UI_PAGE_H
#define FSB_UI_PAGE_H

#include <stdint.h>

/** The bytes of ui/index.html, followed by a NUL. */
extern const char fsb_ui_page[];

/** How many bytes fsb_ui_page holds, without the NUL. */
extern const uint64_t fsb_ui_page_len;

#endif
