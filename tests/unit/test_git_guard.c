/*
 * test_git_guard.c — the git config reader and the judge of its keys
 * (git_config.h): what git reads the guard reads the same way, every key
 * that makes git run a program is risky, the keys git init, git clone and
 * people set are kept, and a file git would refuse counts as risky.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "git_config.h"

static struct fsb_git_cfg parse_ok(const char *text)
{
	struct fsb_git_cfg c;
	char err[256] = "";
	int rc = fsb_git_config_parse(text, strlen(text), &c, err, sizeof(err));

	if (rc != 0)
		fail_msg("parse of <<%s>> failed: %d %s", text, rc, err);
	return c;
}

static void parse_bad(const char *text)
{
	struct fsb_git_cfg c;
	char err[256] = "";
	int rc = fsb_git_config_parse(text, strlen(text), &c, err, sizeof(err));

	if (rc != -EBADMSG)
		fail_msg("<<%s>> parsed (%d), git refuses it", text, rc);
	assert_non_null(strstr(err, "line "));
}

/* The one entry of `text`; "section|sub|key|value" ("(null)" for a bare one). */
static void one(const char *text, const char *want)
{
	struct fsb_git_cfg c = parse_ok(text);
	char got[512];

	if (c.n != 1)
		fail_msg("<<%s>>: %zu entries", text, c.n);
	snprintf(got, sizeof(got), "%s|%s|%s|%s", c.v[0].section, c.v[0].subsection, c.v[0].key,
		 c.v[0].value ? c.v[0].value : "(null)");
	assert_string_equal(got, want);
	fsb_git_config_free(&c);
}

static void reads_sections_keys_and_values_as_git_does(void **state)
{
	(void)state;
	one("[core]\n\tbare = false\n", "core||bare|false");
	one("[CoRe]\n\tFSMonitor = x\n", "core||fsmonitor|x");
	one("[remote \"Origin\"]\n\turl = /a\n", "remote|Origin|url|/a");
	one("[Remote.Origin]\n\turl = /a\n", "remote|origin|url|/a");
	one("[a \"b\\\"c\\\\d\"]\nk=v\n", "a|b\"c\\d|k|v");
	one("[core] fsmonitor = x\n", "core||fsmonitor|x");
	one("[core]\n  logallrefupdates\n", "core||logallrefupdates|(null)");
	one("[core]\nk\n", "core||k|(null)");
	one("[core]\nk =\n", "core||k|");
	one("[core]\nk = \"  a # b ; c \"  # comment\n", "core||k|  a # b ; c ");
	one("[core]\nk = a\\\n  b\n", "core||k|a  b");
	one("[core]\nk = a \\t\\n\\\\\\\"b\n", "core||k|a \t\n\\\"b");
	one("[core]\nk = one  two   \n", "core||k|one  two");
	one("[core]\r\nk = crlf\r\n", "core||k|crlf");
	one("\xef\xbb\xbf[core]\nk = bom\n", "core||k|bom");
	one("# c\n; c\n[core] ; c\n k = v ; c\n", "core||k|v");
	one("[core]\nk = v", "core||k|v");
	one("[includeIf \"gitdir:/x/\"]\n\tpath = /x/cfg\n", "includeif|gitdir:/x/|path|/x/cfg");
}

static void refuses_what_git_refuses(void **state)
{
	(void)state;
	parse_bad("k = v\n");			/* no section */
	parse_bad("[core\nk = v\n");
	parse_bad("[]\nk = v\n");
	parse_bad("[co_re]\nk = v\n");
	parse_bad("[core \"x\" ]\nk = v\n");
	parse_bad("[core x]\nk = v\n");
	parse_bad("[core]\nk = \"open\n");
	parse_bad("[core]\nk = a\\q\n");
	parse_bad("[core]\nk v\n");
	parse_bad("[core]\nk # c\n");
	parse_bad("[core]\n1k = v\n");
	parse_bad("[core]\nk_x = v\n");
	parse_bad("[core]\nk = a\\");
	{
		static const char nul[] = "[core]\nk = a\0b\n";
		struct fsb_git_cfg c;
		char err[128];

		assert_int_equal(fsb_git_config_parse(nul, sizeof(nul) - 1, &c, err, sizeof(err)),
				 -EBADMSG);
	}
}

static void entries_know_their_bytes(void **state)
{
	const char *text = "[core]\n\tbare = false\n\tfsmonitor = \"a\\\n b\"\n[user]\n\tname = x\n";
	struct fsb_git_cfg c = parse_ok(text);

	(void)state;
	assert_int_equal(c.n, 3);
	assert_memory_equal(text + c.v[1].start, "fsmonitor", 9);
	/* It spans its continuation line, up to and with its last newline. */
	assert_string_equal(text + c.v[1].end, "[user]\n\tname = x\n");
	fsb_git_config_free(&c);
}

static const char *risk_of(const char *text, const char *gitdir)
{
	struct fsb_git_cfg c = parse_ok(text);
	const char *why;

	assert_int_equal(c.n, 1);
	why = fsb_git_config_risk(&c.v[0], gitdir);
	fsb_git_config_free(&c);
	return why;
}

static void every_key_that_runs_a_program_is_risky(void **state)
{
	static const char *const risky[] = {
		"[core]\nfsmonitor = touch /tmp/p\n",
		"[core]\nfsmonitor\n",
		"[CORE]\nFsMonitor = \"x\"\n",
		"[core]\nhooksPath = /x\n",
		"[core]\nsshCommand = ssh -oProxyCommand=x\n",
		"[core]\npager = x\n",
		"[core]\neditor = x\n",
		"[core]\naskPass = x\n",
		"[core]\ngitProxy = x\n",
		"[core]\nattributesFile = /x\n",
		"[sequence]\neditor = x\n",
		"[filter \"lfs\"]\nclean = x\n",
		"[filter \"a\"]\nsmudge = x\n",
		"[filter \"a\"]\nprocess = x\n",
		"[diff \"a\"]\ntextconv = x\n",
		"[diff \"a\"]\ncommand = x\n",
		"[diff]\nexternal = x\n",
		"[merge \"a\"]\ndriver = x\n",
		"[alias]\nst = !sh -c x\n",
		"[alias]\nst = -c core.pager=x log\n",
		"[alias]\nst = rebase --exec x\n",
		"[credential]\nhelper = x\n",
		"[credential \"https://h\"]\nhelper = x\n",
		"[include]\npath = /x\n",
		"[includeIf \"gitdir:/\"]\npath = /x\n",
		"[gpg]\nprogram = x\n",
		"[gpg \"ssh\"]\nprogram = x\n",
		"[pager]\nlog = x\n",
		"[web]\nbrowser = x\n",
		"[browser \"a\"]\ncmd = x\n",
		"[uploadpack]\npackObjectsHook = x\n",
		"[remote \"o\"]\nreceivepack = x\n",
		"[remote \"o\"]\nuploadpack = x\n",
		"[remote \"o\"]\nvcs = x\n",
		"[remote \"o\"]\nurl = ext::sh -c x\n",
		"[protocol]\nallow = always\n",
		"[protocol \"ext\"]\nallow = always\n",
		"[hook \"a\"]\ncommand = x\n",
		"[submodule \"a\"]\nupdate = !x\n",
		"[mergetool \"a\"]\ncmd = x\n",
		"[difftool \"a\"]\ncmd = x\n",
		"[core]\nworktree = /home/u\n",
		"[core]\nworktree = ../..\n",
		/* Unknown keys are not harmless until listed. */
		"[core]\nsomethingNew = x\n",
		"[newsection]\nk = v\n",
		"[user \"x\"]\nname = v\n",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(risky) / sizeof(risky[0]); i++)
		if (risk_of(risky[i], "/ws/repo/.git") == NULL)
			fail_msg("<<%s>> is judged harmless", risky[i]);
}

static void keys_git_writes_and_people_set_are_kept(void **state)
{
	static const char *const kept[] = {
		"[core]\nrepositoryformatversion = 0\n",
		"[core]\nfilemode = true\n",
		"[core]\nbare = false\n",
		"[core]\nlogallrefupdates = true\n",
		"[remote \"origin\"]\nurl = /srv/bare.git\n",
		"[remote \"origin\"]\nfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"[branch \"main\"]\nremote = origin\n",
		"[branch \"main\"]\nmerge = refs/heads/main\n",
		"[user]\nname = A U Thor\n",
		"[user]\nemail = a@example.invalid\n",
		"[init]\ndefaultBranch = main\n",
		"[alias]\nco = checkout\n",
		"[color]\nui = auto\n",
		"[color \"diff\"]\nmeta = blue\n",
		"[submodule \"lib\"]\nupdate = rebase\n",
		"[extensions]\nobjectformat = sha256\n",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		const char *why = risk_of(kept[i], "/ws/repo/.git");

		if (why != NULL)
			fail_msg("<<%s>> is judged risky: %s", kept[i], why);
	}
}

/* A submodule's git dir points back at its work tree; a git dir named
 * `src` may be its own (the attack of issue 14 set `worktree = .`). */
static void worktree_inside_the_repository_is_kept(void **state)
{
	(void)state;
	assert_null(risk_of("[core]\nworktree = ../../../lib\n", "/ws/repo/.git/modules/lib"));
	assert_null(risk_of("[core]\nworktree = .\n", "/ws/src"));
	assert_non_null(risk_of("[core]\nworktree = ..\n", "/ws/src"));
	assert_non_null(risk_of("[core]\nworktree = ../../../../x\n", "/ws/repo/.git/modules/lib"));
	assert_non_null(risk_of("[core]\nworktree = .\n", NULL));
}

static void the_reason_names_what_it_runs(void **state)
{
	(void)state;
	assert_string_equal(risk_of("[core]\nfsmonitor = x\n", NULL),
			    "runs a program on every git status");
	assert_string_equal(risk_of("[x]\ny = z\n", NULL), "not a key known to be harmless");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_sections_keys_and_values_as_git_does),
		cmocka_unit_test(refuses_what_git_refuses),
		cmocka_unit_test(entries_know_their_bytes),
		cmocka_unit_test(every_key_that_runs_a_program_is_risky),
		cmocka_unit_test(keys_git_writes_and_people_set_are_kept),
		cmocka_unit_test(worktree_inside_the_repository_is_kept),
		cmocka_unit_test(the_reason_names_what_it_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
