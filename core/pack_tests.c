/*
 * pack_tests.c — the record of pack contents whose self-tests passed (see
 * pack_tests.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pack_tests.h"

#define KEY_LEN 64
#define LINE_LEN (KEY_LEN + 1)

static bool key_ok(const char *key)
{
	if (strlen(key) != KEY_LEN)
		return false;
	for (const char *p = key; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* The recorded keys into `keys` (newest first); how many. */
static int read_keys(const char *state_dir, char keys[FSB_PACK_TESTS_KEPT][KEY_LEN + 1])
{
	char path[PATH_MAX], buf[FSB_PACK_TESTS_KEPT * LINE_LEN];
	ssize_t len = 0, got;
	int fd, n = 0;

	snprintf(path, sizeof(path), "%s/pack-tests", state_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return 0;
	while (len < (ssize_t)sizeof(buf) &&
	       (got = read(fd, buf + len, sizeof(buf) - (size_t)len)) > 0)
		len += got;
	close(fd);
	/* Whole lines of a key each; anything else ends the list. */
	for (ssize_t off = 0; off + LINE_LEN <= len && n < FSB_PACK_TESTS_KEPT; off += LINE_LEN) {
		if (buf[off + KEY_LEN] != '\n')
			break;
		memcpy(keys[n], buf + off, KEY_LEN);
		keys[n][KEY_LEN] = '\0';
		if (!key_ok(keys[n]))
			break;
		n++;
	}
	return n;
}

bool fsb_pack_tests_passed(const char *state_dir, const char *key)
{
	char keys[FSB_PACK_TESTS_KEPT][KEY_LEN + 1];
	int n = read_keys(state_dir, keys);

	for (int i = 0; i < n; i++)
		if (strcmp(keys[i], key) == 0)
			return true;
	return false;
}

int fsb_pack_tests_record(const char *state_dir, const char *key)
{
	char keys[FSB_PACK_TESTS_KEPT][KEY_LEN + 1], path[PATH_MAX], tmp[PATH_MAX];
	char buf[FSB_PACK_TESTS_KEPT * LINE_LEN];
	size_t len = 0;
	int n, fd, err = 0;

	if (!key_ok(key))
		return -EINVAL;
	n = read_keys(state_dir, keys);
	memcpy(buf, key, KEY_LEN);
	buf[KEY_LEN] = '\n';
	len = LINE_LEN;
	for (int i = 0; i < n && len < sizeof(buf); i++) {
		if (strcmp(keys[i], key) == 0)
			continue;
		memcpy(buf + len, keys[i], KEY_LEN);
		buf[len + KEY_LEN] = '\n';
		len += LINE_LEN;
	}
	/* A whole new file renamed over the old: a reader sees one or the
	 * other, and two cores recording at once lose a key at worst. */
	snprintf(path, sizeof(path), "%s/pack-tests", state_dir);
	snprintf(tmp, sizeof(tmp), "%s/.pack-tests.%ld", state_dir, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && err == 0)
		err = -errno;
	if (err == 0 && rename(tmp, path) < 0)
		err = -errno;
	if (err < 0)
		unlink(tmp);
	return err;
}
