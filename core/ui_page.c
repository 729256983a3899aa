/*
 * ui_page.c — the page `fsbroker ui` serves (ui/index.html), built into
 * the binary so that nothing is installed or fetched beside it. The
 * Makefile makes this object depend on ui/index.html.
 */
#include "ui_page.h"

/* The assembler measures the file: no generated source to keep in step. */
__asm__(".section .rodata\n"
	".global fsb_ui_page\n"
	".global fsb_ui_page_len\n"
	"fsb_ui_page:\n"
	".incbin \"ui/index.html\"\n"
	"1:\n"
	".byte 0\n"
	".balign 8\n"
	"fsb_ui_page_len:\n"
	".quad 1b - fsb_ui_page\n"
	".previous\n");
