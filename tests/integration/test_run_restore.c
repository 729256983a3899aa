/*
 * test_run_restore.c — what a restore after `fsbroker run` may remove: only
 * what the cycle created on the host. Names a command creates in the
 * sandbox's private /tmp and ${tmp} are not the host's objects of those
 * names (a tmux socket, a Kerberos cache, a symlink, a tree), and a created
 * file that something else replaced after the run is not the cycle's.
 */
#include "run_fixture.h"

#include <grp.h>
#include <pwd.h>
#include <sys/un.h>

/* The host objects of one scenario, under the pack's ${tmp}. */
#define NOBJS 7
static const char *const obj_names[NOBJS] = {
	"-tmux", "-tmux/default", "-krb5cc", "-link", "-tree", "-tree/a", "-tree/a/f",
};

struct host_objs {
	char base[PATH_MAX];
	char path[NOBJS][PATH_MAX + 32];
	struct stat st[NOBJS];
	char target[PATH_MAX + 16];
};

static int bind_socket(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0 || strlen(path) >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return rc;
}

/* The host's objects: what a user has in `tmp` before the run. */
static const char *make_host_objs(struct fixture *f, const char *tmp, struct host_objs *h,
				  char *msg, size_t len)
{
	snprintf(h->target, sizeof(h->target), "%s/target", f->root);
	fsbt_write_file(h->target, "the host's target\n");
	snprintf(h->base, sizeof(h->base), "%s/fsbt-rt-%ld", tmp, (long)getpid());
	for (int i = 0; i < NOBJS; i++)
		snprintf(h->path[i], sizeof(h->path[i]), "%s%s", h->base, obj_names[i]);
	if (mkdir(h->path[0], 0700) < 0 || bind_socket(h->path[1]) < 0 ||
	    symlink(h->target, h->path[3]) < 0 || mkdir(h->path[4], 0755) < 0 ||
	    mkdir(h->path[5], 0755) < 0) {
		snprintf(msg, len, "cannot make the host's objects under %s: %s", h->base,
			 strerror(errno));
		return msg;
	}
	fsbt_write_file(h->path[2], "the host's ticket\n");
	fsbt_write_file(h->path[6], "the host's tree\n");
	for (int i = 0; i < NOBJS; i++)
		if (lstat(h->path[i], &h->st[i]) < 0) {
			snprintf(msg, len, "lstat %s: %s", h->path[i], strerror(errno));
			return msg;
		}
	return NULL;
}

static void remove_host_objs(const struct host_objs *h)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'-*", h->base);
	if (h->base[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "# could not remove %s-*\n", h->base);
}

/*
 * The scenario in plain C (it also runs in a child as another uid), with
 * the pack's ${tmp} at `tmp` (TMPDIR), which the sandbox sees as a private
 * tmpfs: the command creates there the names of the host's socket (with
 * its directory), file, symlink and tree; then `backup restore --last`
 * must take back the workspace file the run made and leave every host
 * object as it was. NULL, or what went wrong.
 */
static const char *private_tmp_scenario(struct fixture *f, const char *tmp, char *msg,
					size_t len)
{
	char script[16384], made[PATH_MAX + 16], *out = NULL, *text;
	struct host_objs h;
	const char *err;
	int st;

	memset(&h, 0, sizeof(h));
	if ((err = make_host_objs(f, tmp, &h, msg, len)) != NULL)
		goto done;
	snprintf(made, sizeof(made), "%s/made.txt", f->ws);
	snprintf(script, sizeof(script),
		 "mkdir -p '%1$s-tmux' && : > '%1$s-tmux/default' && : > '%1$s-krb5cc' && "
		 ": > '%1$s-link' && mkdir -p '%1$s-tree/a' && : > '%1$s-tree/a/g' && "
		 "echo made > '%2$s'", h.base, made);
	setenv("TMPDIR", tmp, 1);
	st = run_sh(f, NULL, script, &out);
	setenv("TMPDIR", f->tmp, 1);
	if (st != 0) {
		snprintf(msg, len, "fsbroker run exited 0x%x:\n%s", (unsigned)st, out ? out : "");
		err = msg;
		goto done;
	}
	free(out);
	out = NULL;
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL },
		      &out);
	err = msg;
	for (int i = 0; i < NOBJS; i++) {
		struct stat now;
		const struct stat *was = &h.st[i];

		if (lstat(h.path[i], &now) < 0) {
			snprintf(msg, len, "the restore removed the host's %s; it said:\n%s",
				 h.path[i], out ? out : "");
			goto done;
		}
		if (now.st_dev != was->st_dev || now.st_ino != was->st_ino ||
		    (now.st_mode & S_IFMT) != (was->st_mode & S_IFMT)) {
			snprintf(msg, len, "the host's %s was replaced; the restore said:\n%s",
				 h.path[i], out ? out : "");
			goto done;
		}
	}
	text = fsbt_read_file(h.target, NULL);
	if (text == NULL || strcmp(text, "the host's target\n") != 0) {
		snprintf(msg, len, "the symlinks' target %s changed", h.target);
		free(text);
		goto done;
	}
	free(text);
	/* The restore did its work on what the cycle made on the host. */
	if (access(made, F_OK) == 0 || st != 0) {
		snprintf(msg, len, "restore exited 0x%x and %s the run's %s:\n%s", (unsigned)st,
			 access(made, F_OK) == 0 ? "left" : "removed", made, out ? out : "");
		goto done;
	}
	err = NULL;
done:
	free(out);
	remove_host_objs(&h);
	return err;
}

static void restore_after_private_tmp_creates_leaves_the_hosts_files(void **state)
{
	struct fixture *f = *state;
	char why[512], msg[16384];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* /tmp as ${tmp} (no TMPDIR), then a ${tmp} of its own elsewhere. */
	if (private_tmp_scenario(f, "/tmp", msg, sizeof(msg)) != NULL)
		fsbt_fail_long("with ${tmp} = /tmp: %s", msg);
	if (private_tmp_scenario(f, f->tmp, msg, sizeof(msg)) != NULL)
		fsbt_fail_long("with ${tmp} = %s: %s", f->tmp, msg);
}

/* The ordinary user the test switches to (as root): FSBT_USER, else nobody. */
static void ordinary_user(uid_t *uid, gid_t *gid)
{
	const char *name = getenv("FSBT_USER");
	const struct passwd *pw = name != NULL ? getpwnam(name) : NULL;

	*uid = pw != NULL ? pw->pw_uid : 65534;
	*gid = pw != NULL ? pw->pw_gid : 65534;
}

/* The same as an ordinary user: the child switches uid and runs it all. */
static void restore_after_private_tmp_creates_leaves_the_hosts_files_as_a_user(void **state)
{
	struct fixture *f = *state;
	char why[512], msg[16384], cmd[PATH_MAX + 64];
	int p[2], status;
	ssize_t n, got = 0;
	uid_t uid;
	gid_t gid;
	pid_t pid;

	ordinary_user(&uid, &gid);
	if (geteuid() != 0)
		fsbt_skip("needs root to run as another uid (uid %u)", (unsigned)uid);
	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(cmd, sizeof(cmd), "chown -R %u:%u '%s'", (unsigned)uid, (unsigned)gid, f->root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *err;
		int code = 1;

		close(p[0]);
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0) {
			snprintf(msg, sizeof(msg), "cannot become uid %u: %s", (unsigned)uid,
				 strerror(errno));
		} else if (access(fsbt_binary(), X_OK) < 0) {
			snprintf(msg, sizeof(msg), "uid %u cannot run %s (the checkout is in a "
				 "directory other users cannot enter)", (unsigned)uid, fsbt_binary());
			code = 77;
		} else if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL) {
			snprintf(msg, sizeof(msg), "as uid %u: %s", (unsigned)uid, why);
			code = 77;
		} else if ((err = private_tmp_scenario(f, "/tmp", msg, sizeof(msg))) == NULL &&
			   (err = private_tmp_scenario(f, f->tmp, msg, sizeof(msg))) == NULL) {
			code = 0;
		}
		if (code != 0 && write(p[1], msg, strlen(msg)) < 0)
			code = 1;
		_exit(code);
	}
	close(p[1]);
	while ((n = read(p[0], msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
		got += n;
	msg[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		fsbt_skip("%s", msg);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fsbt_fail_long("as uid %u (status 0x%x): %s", (unsigned)uid, (unsigned)status, msg);
}

/*
 * A file the run created, replaced after it by another file of that name,
 * is not the cycle's: a restore leaves it and says so. With --force it goes
 * (the user asked for the state before the run), but a socket that took the
 * place of a created file never does: no restore makes one again.
 */
static void restore_removes_only_the_object_the_cycle_created(void **state)
{
	struct fixture *f = *state;
	char why[512], made[PATH_MAX + 16], other[PATH_MAX + 16], sock[PATH_MAX + 16];
	char dir[PATH_MAX + 16], inside[PATH_MAX + 32], want[PATH_MAX * 2], script[PATH_MAX * 4];
	char *out = NULL, *text;
	struct stat st;
	int rc;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(made, sizeof(made), "%s/made.txt", f->ws);
	snprintf(other, sizeof(other), "%s/other.txt", f->ws);
	snprintf(sock, sizeof(sock), "%s/sock", f->ws);
	snprintf(dir, sizeof(dir), "%s/dir", f->ws);
	snprintf(inside, sizeof(inside), "%s/dir/users-file", f->ws);
	snprintf(script, sizeof(script), "echo run > '%s' && echo run > '%s' && echo run > '%s' "
		 "&& mkdir '%s'", made, other, sock, dir);
	rc = run_sh(f, NULL, script, &out);
	if (rc != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)rc, out ? out : "");
	free(out);
	out = NULL;
	/* After the run: made.txt is another file now, sock a socket, and the
	 * directory holds a file of the user's. */
	assert_int_equal(unlink(made), 0);
	fsbt_write_file(made, "the user's own\n");
	assert_int_equal(unlink(sock), 0);
	assert_int_equal(bind_socket(sock), 0);
	fsbt_write_file(inside, "the user's\n");

	rc = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL },
		      &out);
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 1)
		fsbt_fail_long("restore exited 0x%x, not 1 (a partial restore):\n%s", (unsigned)rc,
			       out ? out : "");
	text = fsbt_read_file(made, NULL);
	assert_non_null(text);
	assert_string_equal(text, "the user's own\n");
	free(text);
	snprintf(want, sizeof(want), "%s: ", made);
	if (strstr(out, want) == NULL)
		fsbt_fail_long("the restore does not name %s:\n%s", made, out);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(access(inside, F_OK), 0);
	/* The one the cycle made and nobody touched goes. */
	assert_int_equal(access(other, F_OK), -1);
	free(out);
	out = NULL;

	rc = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last", "--force",
				  "--state-dir", f->state, "--session", "s", NULL },
		      &out);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	snprintf(want, sizeof(want), "left %s: not removed: the cycle created a file here and a "
		 "socket is there now", sock);
	if (strstr(out, want) == NULL)
		fsbt_fail_long("restore --force (0x%x) does not say it left %s:\n%s", (unsigned)rc,
			       sock, out);
	assert_int_equal(access(inside, F_OK), 0);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			restore_after_private_tmp_creates_leaves_the_hosts_files, setup, teardown),
		cmocka_unit_test_setup_teardown(
			restore_after_private_tmp_creates_leaves_the_hosts_files_as_a_user, setup,
			teardown),
		cmocka_unit_test_setup_teardown(restore_removes_only_the_object_the_cycle_created,
						setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
