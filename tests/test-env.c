/* SPDX-License-Identifier: MIT */
/* test-env.c - configuration from the environment (src/env.c): HEIST_NUM_THREADS,
 * HEIST_PIN, HEIST_MAX_SPARES, HEIST_PROFILE, HEIST_PROFILE_EVERY and HEIST_TRACE fill
 * the fields a program leaves at 0, a field it sets wins, ignore_environment turns them
 * off, and a bad value is ignored with one line on stderr (one, whatever the value
 * holds: it is shown escaped), the pool then made as if the variable were unset. The
 * reports' contents, their names and fork are check-profile-env.py's. */
#include <dirent.h>
#include <errno.h>
#if !defined(_WIN32)
#include <sched.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "heist/profile.h"

static void
clear_env(void)
{
	unsetenv("HEIST_NUM_THREADS");
	unsetenv("HEIST_PIN");
	unsetenv("HEIST_MAX_SPARES");
	unsetenv("HEIST_PROFILE");
	unsetenv("HEIST_PROFILE_EVERY");
	unsetenv("HEIST_TRACE");
}

static int
setup(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

/* One pool made from cfg (NULL: defaults) with stderr captured: its size, its
 * heist_pool_threads, the CPUs its first worker may run on, and what it said. */
struct made {
	const struct heist_config *cfg;
	unsigned size, threads;
	int worker_cpus;
	char said[512];
};

static void
record_cpus(void *ctx, unsigned index)
{
#if defined(_WIN32)
	(void)ctx;	/* a thread has no mask to read: worker_cpus stays -1 */
	(void)index;
#else
	cpu_set_t set;
	if (index == 0 && !sched_getaffinity(0, sizeof(set), &set))
		*(int *)ctx = CPU_COUNT(&set);
#endif
}

static void
make_and_destroy(void *arg)
{
	struct made *m = arg;
	struct heist_config cfg = m->cfg ? *m->cfg : (struct heist_config){0};
	m->worker_cpus = -1;
	cfg.on_worker_start = record_cpus;
	cfg.hook_ctx = &m->worker_cpus;
	heist_pool *pool = NULL;
	int err = heist_pool_create(&pool, &cfg);
	if (err) {
		m->size = 0;
		return;
	}
	m->size = heist_pool_size(pool);
	m->threads = heist_pool_threads(pool);
	check_pool_works(pool);
	heist_pool_destroy(pool);	/* joins: the start hook has run */
}

static struct made
made(const struct heist_config *cfg)
{
	struct made m = {.cfg = cfg};
	capture_stderr(make_and_destroy, &m, m.said, sizeof(m.said));
	assert_true(m.size > 0);
	return m;
}

static unsigned
lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int
process_cpus(void)
{
	long n = cpus_allowed();
	assert_true(n > 0);
	return (int)n;
}

/* Windows keeps no empty environment variable (setting one to "" unsets it): a case
 * with an empty value is skipped there, saying so. */
static bool
skip_empty_value(const char *var, const char *value)
{
#if defined(_WIN32)
	if (!*value) {
		print_message("# %s=\"\" skipped: Windows unsets a variable set to \"\"\n", var);
		return true;
	}
#endif
	(void)var;
	(void)value;
	return false;
}

static void
num_threads_fills_threads_left_at_zero(void **state)
{
	(void)state;
	unsigned dflt = made(NULL).size;
	setenv("HEIST_NUM_THREADS", "3", 1);
	struct made m = made(NULL);
	assert_int_equal(m.size, 3);
	assert_string_equal(m.said, "");
	struct heist_config zero = {0};
	assert_int_equal(made(&zero).size, 3);
	struct heist_config one = {.threads = 1};
	assert_int_equal(made(&one).size, 1);	/* the program's field wins */
	struct heist_config off = {.ignore_environment = true};
	assert_int_equal(made(&off).size, dflt);
}

static void
bad_thread_counts_are_ignored_with_one_line(void **state)
{
	(void)state;
	unsigned dflt = made(NULL).size;
	static const char *const bad[] = {"", "0", "-1", "+2", " 2", "2 ", "2x", "two",
					  "4097", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (skip_empty_value("HEIST_NUM_THREADS", bad[i]))
			continue;
		setenv("HEIST_NUM_THREADS", bad[i], 1);
		struct made m = made(NULL);
		assert_int_equal(m.size, dflt);
		assert_int_equal(lines(m.said), 1);
		assert_non_null(strstr(m.said, "HEIST_NUM_THREADS"));
		assert_non_null(strstr(m.said, "ignored"));
	}
	/* ignore_environment: not even read, so nothing is said. */
	struct heist_config off = {.ignore_environment = true};
	struct made m = made(&off);
	assert_int_equal(m.size, dflt);
	assert_string_equal(m.said, "");
}

static void
max_spares_fills_max_spares_left_at_zero(void **state)
{
	(void)state;
	struct heist_config two = {.threads = 2};
	unsigned dflt = made(&two).threads;
	assert_int_equal(dflt, 2 + 1 + 256);	/* workers, guest slot, 256 spares */
	static const struct {
		const char *value;
		unsigned spares;
	} good[] = {{"none", 0}, {"NONE", 0}, {"0", 0}, {"5", 5}, {"4096", 4096}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("HEIST_MAX_SPARES", good[i].value, 1);
		struct made m = made(&two);
		assert_int_equal(m.threads, 3 + good[i].spares);
		assert_string_equal(m.said, "");
	}
	setenv("HEIST_MAX_SPARES", "5", 1);
	struct heist_config seven = {.threads = 2, .max_spares = 7};
	assert_int_equal(made(&seven).threads, 3 + 7);	/* the program's field wins */
	struct heist_config off = {.threads = 2, .ignore_environment = true};
	assert_int_equal(made(&off).threads, dflt);
	static const char *const bad[] = {"", "-1", "4097", "some", "5 "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (skip_empty_value("HEIST_MAX_SPARES", bad[i]))
			continue;
		setenv("HEIST_MAX_SPARES", bad[i], 1);
		struct made m = made(&two);
		assert_int_equal(m.threads, dflt);
		assert_int_equal(lines(m.said), 1);
		assert_non_null(strstr(m.said, "HEIST_MAX_SPARES"));
	}
}

static void
pin_fills_pin_left_at_none(void **state)
{
	(void)state;
#if defined(_WIN32)
	skip_because("reads a worker's CPU mask with Linux's sched_getaffinity");
#endif
	int cpus = process_cpus();
	if (cpus < 2)
		skip_because("one CPU: a worker bound to it looks like one that is not");
	struct heist_config two = {.threads = 2};
	assert_int_equal(made(&two).worker_cpus, cpus);	/* unpinned */
	setenv("HEIST_PIN", "pu", 1);
	struct made m = made(&two);
	assert_int_equal(m.worker_cpus, 1);
	assert_string_equal(m.said, "");
	/* Bound to its core's CPUs: as many as the field itself gives (all of them on a
	 * machine of one core). */
	struct heist_config core = {.threads = 2, .pin = HEIST_PIN_CORE};
	int core_cpus = made(&core).worker_cpus;
	setenv("HEIST_PIN", "Core", 1);
	m = made(&two);
	assert_int_equal(m.worker_cpus, core_cpus);
	assert_string_equal(m.said, "");
	setenv("HEIST_PIN", "none", 1);
	m = made(&two);
	assert_int_equal(m.worker_cpus, cpus);
	assert_string_equal(m.said, "");
	setenv("HEIST_PIN", "pu", 1);
	struct heist_config off = {.threads = 2, .ignore_environment = true};
	assert_int_equal(made(&off).worker_cpus, cpus);
	static const char *const bad[] = {"", "socket", "1", "pu "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("HEIST_PIN", bad[i], 1);
		m = made(&two);
		assert_int_equal(m.worker_cpus, cpus);
		assert_int_equal(lines(m.said), 1);
		assert_non_null(strstr(m.said, "HEIST_PIN"));
	}
}

static void
every_bad_variable_says_its_own_line(void **state)
{
	(void)state;
	setenv("HEIST_NUM_THREADS", "many", 1);
	setenv("HEIST_PIN", "everywhere", 1);
	setenv("HEIST_MAX_SPARES", "lots", 1);
	struct made m = made(NULL);
	assert_int_equal(lines(m.said), 3);
	assert_non_null(strstr(m.said, "HEIST_NUM_THREADS=\"many\""));
	assert_non_null(strstr(m.said, "HEIST_PIN=\"everywhere\""));
	assert_non_null(strstr(m.said, "HEIST_MAX_SPARES=\"lots\""));
}

/* A value is shown escaped, so that its line stays one: control bytes, backslash and
 * double quote C-style, the rest (UTF-8 here) as is. */
static void
bad_values_are_shown_escaped_on_one_line(void **state)
{
	(void)state;
	setenv("HEIST_PIN", "a\nb\r\tc\\d\"e\x01\x1f\x7f\xc3\xa9\n", 1);
	struct made m = made(NULL);
	assert_int_equal(lines(m.said), 1);
	assert_string_equal(m.said, "heist: HEIST_PIN=\"a\\nb\\r\\tc\\\\d\\\"e\\x01\\x1f"
				    "\\x7f\xc3\xa9\\n\" ignored: want none, core or pu\n");
	setenv("HEIST_NUM_THREADS", "4\n", 1);
	setenv("HEIST_PIN", "core\nheist: HEIST_PIN=\"pu\" ignored: want a fake line", 1);
	m = made(NULL);
	assert_int_equal(lines(m.said), 2);	/* one a variable */
	assert_non_null(strstr(m.said, "HEIST_NUM_THREADS=\"4\\n\" ignored"));
	assert_non_null(strstr(m.said, "HEIST_PIN=\"core\\nheist: HEIST_PIN=\\\"pu\\\" ignored"));
}

/* ---------------------------------------------------------------------------------- */
/* HEIST_PROFILE, HEIST_PROFILE_EVERY, HEIST_TRACE                                    */

/* A pool made from cfg with stderr captured: whether it profiles, its sampling, what
 * it said (create and destroy), and errno after its destroy (set to 1234 before). */
struct profiled {
	const struct heist_config *cfg;
	bool profiles;
	uint64_t every;
	int errno_after;
	char said[512];
};

static void
profile_and_destroy(void *arg)
{
	struct profiled *p = arg;
	heist_pool *pool = NULL;
	assert_int_equal(heist_pool_create(&pool, p->cfg), 0);
	struct heist_latency_report rep;
	p->profiles = heist_profile_report(pool, &rep) == 0;
	p->every = p->profiles ? rep.sampled_every : 0;
	check_pool_works(pool);
	errno = 1234;
	heist_pool_destroy(pool);
	p->errno_after = errno;
}

static struct profiled
profiled(const struct heist_config *cfg)
{
	struct profiled p = {.cfg = cfg};
	capture_stderr(profile_and_destroy, &p, p.said, sizeof(p.said));
	return p;
}

static char dir[300];

/* The files in dir, and the first one's name; each one removed. */
static unsigned
take_files(char *first, size_t cap)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	unsigned n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (!n++ && first)
			snprintf(first, cap, "%s", e->d_name);
		char path[sizeof(dir) + 1 + sizeof(e->d_name)];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	return n;
}

static int
setup_dir(void **state)
{
	setup(state);
	snprintf(dir, sizeof(dir), "%s/heist-test-env-XXXXXX", test_tmpdir());
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown_dir(void **state)
{
	take_files(NULL, 0);
	rmdir(dir);
	return teardown(state);
}

static void
set_in_dir(const char *var, const char *name)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	setenv(var, path, 1);
}

static void
profile_turns_the_profiler_on_and_writes_at_destroy(void **state)
{
	(void)state;
	if (!HEIST_PROFILER)
		skip();	/* profiler_compiled_out_ignores_the_variables instead */
	struct profiled p = profiled(NULL);
	assert_false(p.profiles);	/* unset: no profiler */
	assert_int_equal(take_files(NULL, 0), 0);
	set_in_dir("HEIST_PROFILE", "r-%p.json");
	p = profiled(NULL);
	assert_true(p.profiles);
	assert_int_equal(p.every, 4);	/* the default sampling */
	assert_string_equal(p.said, "");
	assert_int_equal(p.errno_after, 1234);	/* writing the report keeps errno */
	char name[256];
	assert_int_equal(take_files(name, sizeof(name)), 1);
	char want[32];
	snprintf(want, sizeof(want), "r-%ld", (long)getpid());
	assert_memory_equal(name, want, strlen(want));	/* %p: the process id */
	unsetenv("HEIST_PROFILE");
	set_in_dir("HEIST_TRACE", "t.json");
	p = profiled(NULL);
	assert_true(p.profiles);	/* the trace alone turns it on too */
	assert_int_equal(take_files(name, sizeof(name)), 1);
	/* A program that profiles on its own writes no file. */
	unsetenv("HEIST_TRACE");
	struct heist_config on = {.profile = true};
	p = profiled(&on);
	assert_true(p.profiles);
	assert_int_equal(take_files(NULL, 0), 0);
}

/* The report is written under a temporary name first: a name someone else made
 * there (a link to another file, in a shared directory; on Windows, whose links need
 * a privilege, a file) is neither written through nor moved over the report; the
 * report goes under another temporary name. Which number the pool's report takes
 * depends on the pools before it in this process (out.json, out.2.json, ...): one
 * waits at the temporary name of each. */
enum { PLANTED_NUMBERS = 64 };

static void
report_name(char *buf, size_t cap, unsigned number, bool tmp)
{
	char num[16] = "";
	if (number > 1)
		snprintf(num, sizeof(num), ".%u", number);
	if (tmp)
		snprintf(buf, cap, "%s/r%s.json.tmp%ld", dir, num, (long)getpid());
	else
		snprintf(buf, cap, "%s/r%s.json", dir, num);
}

static void
write_keep(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("keep", f);
	assert_int_equal(fclose(f), 0);
}

static bool
holds_keep(const char *path)
{
	char got[16] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool keep = fgets(got, sizeof(got), f) && strcmp(got, "keep") == 0;
	fclose(f);
	return keep;
}

static void
a_name_taken_at_the_temporary_name_is_not_written_through(void **state)
{
	(void)state;
	if (!HEIST_PROFILER)
		skip();
	char victim[sizeof(dir) + 16], name[sizeof(dir) + 64];
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	write_keep(victim);
	for (unsigned k = 1; k <= PLANTED_NUMBERS; k++) {
		report_name(name, sizeof(name), k, true);
#if defined(_WIN32)
		write_keep(name);
#else
		assert_int_equal(symlink(victim, name), 0);
#endif
	}
	set_in_dir("HEIST_PROFILE", "r.json");
	struct profiled p = profiled(NULL);
	unsetenv("HEIST_PROFILE");
	assert_true(p.profiles);
	assert_string_equal(p.said, "");
	assert_true(holds_keep(victim));
	unsigned reports = 0;
	for (unsigned k = 1; k <= PLANTED_NUMBERS; k++) {
		report_name(name, sizeof(name), k, true);
		assert_true(holds_keep(name));	/* still there, as it was */
#if !defined(_WIN32)
		char target[sizeof(dir) + 16];
		assert_true(readlink(name, target, sizeof(target)) > 0);	/* a link */
#endif
		report_name(name, sizeof(name), k, false);
		FILE *f = fopen(name, "r");	/* the report, a file of its own */
		if (f) {
			reports++;
			assert_int_equal(fgetc(f), '{');
			fclose(f);
		}
	}
	assert_int_equal(reports, 1);
	/* The victim, the planted names and the report: no temporary left. */
	assert_int_equal(take_files(NULL, 0), 1 + PLANTED_NUMBERS + 1);
}

static void
profile_every_fills_a_sampling_left_at_zero(void **state)
{
	(void)state;
	if (!HEIST_PROFILER)
		skip();	/* profiler_compiled_out_ignores_the_variables instead */
	set_in_dir("HEIST_PROFILE", "r.json");
	setenv("HEIST_PROFILE_EVERY", "1", 1);
	assert_int_equal(profiled(NULL).every, 1);
	setenv("HEIST_PROFILE_EVERY", "16", 1);
	assert_int_equal(profiled(NULL).every, 16);
	struct heist_config two = {.profile = true, .profile_every = 2};
	assert_int_equal(profiled(&two).every, 2);	/* the program's field wins */
	/* A program that profiles every task (profile_every 0) keeps doing so. */
	unsetenv("HEIST_PROFILE_EVERY");
	struct heist_config every = {.profile = true};
	assert_int_equal(profiled(&every).every, 1);
	take_files(NULL, 0);
}

static void
bad_profile_values_are_ignored_with_one_line(void **state)
{
	(void)state;
	if (!HEIST_PROFILER)
		skip();	/* profiler_compiled_out_ignores_the_variables instead */
	static const char *const files[] = {"HEIST_PROFILE", "HEIST_TRACE"};
	for (int i = 0; i < 2; i++) {
		if (skip_empty_value(files[i], ""))
			continue;
		setenv(files[i], "", 1);
		struct profiled p = profiled(NULL);
		assert_false(p.profiles);
		assert_int_equal(lines(p.said), 1);
		assert_non_null(strstr(p.said, files[i]));
		unsetenv(files[i]);
	}
	set_in_dir("HEIST_PROFILE", "r.json");
	static const char *const bad[] = {"", "0", "-4", "x", "8 ", "1048577"};
	unsigned reports = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (skip_empty_value("HEIST_PROFILE_EVERY", bad[i]))
			continue;
		setenv("HEIST_PROFILE_EVERY", bad[i], 1);
		reports++;
		struct profiled p = profiled(NULL);
		assert_true(p.profiles);
		assert_int_equal(p.every, 4);
		assert_int_equal(lines(p.said), 1);
		assert_non_null(strstr(p.said, "HEIST_PROFILE_EVERY"));
	}
	/* One report a pool (r.json, or r.N.json for the process's Nth). */
	assert_int_equal(take_files(NULL, 0), reports);
	/* Without HEIST_PROFILE, HEIST_PROFILE_EVERY is not even read. */
	unsetenv("HEIST_PROFILE");
	setenv("HEIST_PROFILE_EVERY", "x", 1);
	struct profiled p = profiled(NULL);
	assert_false(p.profiles);
	assert_string_equal(p.said, "");
}

static void
unwritable_report_says_one_line_and_keeps_errno(void **state)
{
	(void)state;
	if (!HEIST_PROFILER)
		skip();	/* profiler_compiled_out_ignores_the_variables instead */
	setenv("HEIST_PROFILE", "/nonexistent-heist-dir/r.json", 1);
	struct profiled p = profiled(NULL);
	assert_true(p.profiles);
	assert_int_equal(lines(p.said), 1);
	assert_non_null(strstr(p.said, "HEIST_PROFILE: cannot write /nonexistent-heist-dir/r."));
	assert_int_equal(p.errno_after, 1234);
	/* The name is shown escaped, as a bad value is: still one line. */
	setenv("HEIST_PROFILE", "/nonexistent-heist-dir/a\nb.json", 1);
	p = profiled(NULL);
	assert_int_equal(lines(p.said), 1);
	assert_non_null(strstr(p.said, "cannot write /nonexistent-heist-dir/a\\nb."));
}

static void
ignore_environment_writes_no_report(void **state)
{
	(void)state;
	if (!HEIST_PROFILER)
		skip();	/* profiler_compiled_out_ignores_the_variables instead */
	set_in_dir("HEIST_PROFILE", "r.json");
	set_in_dir("HEIST_TRACE", "t.json");
	setenv("HEIST_PROFILE_EVERY", "x", 1);
	struct heist_config off = {.ignore_environment = true};
	struct profiled p = profiled(&off);
	assert_false(p.profiles);
	assert_string_equal(p.said, "");
	assert_int_equal(take_files(NULL, 0), 0);
}

/* -Dprofiler=false: HEIST_PROFILE and HEIST_TRACE are ignored with their line. */
static void
profiler_compiled_out_ignores_the_variables(void **state)
{
	(void)state;
	if (HEIST_PROFILER)
		skip();
	set_in_dir("HEIST_PROFILE", "r.json");
	struct profiled p = profiled(NULL);
	assert_false(p.profiles);
	assert_int_equal(lines(p.said), 1);
	assert_non_null(strstr(p.said, "HEIST_PROFILE"));
	assert_non_null(strstr(p.said, "-Dprofiler=true"));
	assert_int_equal(take_files(NULL, 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(num_threads_fills_threads_left_at_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_thread_counts_are_ignored_with_one_line,
						setup, teardown),
		cmocka_unit_test_setup_teardown(max_spares_fills_max_spares_left_at_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(pin_fills_pin_left_at_none, setup, teardown),
		cmocka_unit_test_setup_teardown(every_bad_variable_says_its_own_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_values_are_shown_escaped_on_one_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(profile_turns_the_profiler_on_and_writes_at_destroy,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(a_name_taken_at_the_temporary_name_is_not_written_through,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(profile_every_fills_a_sampling_left_at_zero,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(bad_profile_values_are_ignored_with_one_line,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(unwritable_report_says_one_line_and_keeps_errno,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(ignore_environment_writes_no_report, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(profiler_compiled_out_ignores_the_variables,
						setup_dir, teardown_dir),
	};
	return RUN_TESTS(tests);
}
