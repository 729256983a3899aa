/*
 * ui_page.c — the page `fsbroker ui` serves (ui/index.html), built into
 * the binary so that nothing is installed or fetched beside it. The
 * Makefile makes this object depend on ui/index.html.
 */

/* fsb_ui_page .. fsb_ui_page_end: the bytes of ui/index.html. */
__asm__(".section .rodata\n"
	".global fsb_ui_page\n"
	".global fsb_ui_page_end\n"
	"fsb_ui_page:\n"
	".incbin \"ui/index.html\"\n"
	"fsb_ui_page_end:\n"
	".byte 0\n"
	".previous\n");
