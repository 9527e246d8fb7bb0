// SPDX-License-Identifier: MIT
/*
 * exanetctl run: starts a command in a protection domain.  The child waits
 * on a pipe until the parent has bound its pid, then drops privileges and
 * execs; the parent forwards SIGTERM and exits with the command's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exa_domain.h>

#include "exanetctl.h"

static int resolve_user(const char *s, uid_t *uid, gid_t *gid, const char **name)
{
	struct passwd *pw = getpwnam(s);
	uint32_t v;

	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		*name = pw->pw_name;
		return 0;
	}
	if (tool_parse_uint(s, 0, 0x7fffffff, &v))
		return -EINVAL;
	pw = getpwuid(v);
	*uid = v;
	*gid = pw ? pw->pw_gid : v;	/* no passwd entry: group of the same number */
	*name = pw ? pw->pw_name : NULL;
	return 0;
}

/* SIGTERM goes on to the program we run: a service manager may signal only us */
static volatile pid_t run_child;
static void run_forward_signal(int sig)
{
	if (run_child > 0)
		kill(run_child, sig);
}

int cmd_run(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "pdid", required_argument, NULL, 'd' },
		{ "user", required_argument, NULL, 'u' },
		{ 0 }
	};
	const char *user = NULL, *uname = NULL;
	uint32_t pdid = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int c, pipefd[2], status, err;
	pid_t child;
	char go = 0;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+:d:u:", lopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (tool_opt_uint(TOOL, "--pdid", optarg, EXA_DOMAIN_JOB_MIN,
					  EXA_DOMAIN_JOB_MAX, &pdid))
				return EXIT_USAGE;
			break;
		case 'u':
			user = optarg;
			break;
		default:
			tool_opt_error(TOOL, argv, c);
			return EXIT_USAGE;
		}
	}
	if (!pdid || optind >= argc) {
		fprintf(stderr, TOOL ": run needs --pdid N and a command after --\n");
		return EXIT_USAGE;
	}
	if (user && resolve_user(user, &uid, &gid, &uname)) {
		tool_bad_value(TOOL, "--user", user, "a user name or a uid in 0..%u", 0x7fffffff);
		return EXIT_USAGE;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		perror(TOOL ": pipe");
		return 1;
	}
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror(TOOL ": fork");
		return 1;
	}
	if (child == 0) {
		close(pipefd[1]);
		/* wait until the parent bound our pid (or gave up) */
		if (read(pipefd[0], &go, 1) != 1 || go != 'g')
			_exit(127);
		close(pipefd[0]);
		if (user) {
			if ((uname ? initgroups(uname, gid) : setgroups(0, NULL)) < 0 ||
			    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
				fprintf(stderr, TOOL ": dropping privileges to %s: %s\n", user,
					strerror(errno));
				_exit(127);
			}
		}
		execvp(argv[optind], &argv[optind]);
		fprintf(stderr, TOOL ": exec %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(pipefd[0]);
	err = pdid_bind((uint32_t)child, pdid);
	if (err) {
		if (err != NL_OPEN_FAILED)
			fprintf(stderr, TOOL ": binding pid %d to pdid %u: %s%s\n", (int)child, pdid,
				strerror(-err), genl_err_hint(err));
		close(pipefd[1]);	/* child exits 127 */
		waitpid(child, &status, 0);
		return 1;
	}
	go = 'g';
	if (write(pipefd[1], &go, 1) != 1) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		return 1;
	}
	close(pipefd[1]);
	/* the child is in our process group: it gets terminal signals itself */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	run_child = child;
	signal(SIGTERM, run_forward_signal);
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			perror(TOOL ": waitpid");
			return 1;
		}
	}
	/* the binding dies with the process in the driver; be tidy anyway */
	pdid_unbind((uint32_t)child);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
