/* SPDX-License-Identifier: MIT */
/* env.c - a pool's configuration from the environment, as OMP_NUM_THREADS sets an
 * OpenMP program's: HEIST_NUM_THREADS, HEIST_PIN, HEIST_MAX_SPARES, and the profile a
 * program writes without knowing it (HEIST_PROFILE, HEIST_PROFILE_EVERY, HEIST_TRACE;
 * report.c writes the files), read once per heist_pool_create. The one rule (heist.h,
 * at heist_config): a field the program sets wins; a variable fills only a field left
 * at its default, and heist_config.ignore_environment turns them all off. What is not
 * understood is ignored with one line on stderr, never taken half-read; the value it
 * shows is escaped (heist__env_escape), so that a newline in it cannot make two. */
#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "platform/platform.h"
#include "probe.h"

/* value as a whole number from lo to hi, in decimal: nothing before or after it. */
static bool
parse_count(const char *value, unsigned lo, unsigned hi, unsigned *out)
{
	if (value[0] < '0' || value[0] > '9')
		return false;	/* strtoul would take "-1", " 4" and "+4" */
	int saved = errno;
	errno = 0;
	char *end;
	unsigned long v = strtoul(value, &end, 10);
	bool ok = !errno && *end == '\0' && v >= lo && v <= hi;
	errno = saved;
	if (ok)
		*out = (unsigned)v;
	return ok;
}

char *
heist__env_escape(const char *s)
{
	char *out = malloc(4 * strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
				  : c == '\\' ? "\\\\" : c == '"' ? "\\\"" : NULL;
		if (named) {
			memcpy(o, named, 2);
			o += 2;
		} else if (c < 0x20 || c == 0x7f) {
			o += sprintf(o, "\\x%02x", c);
		} else {
			*o++ = (char)c;
		}
	}
	*o = '\0';
	return out;
}

/* The one line a bad value gets: its name, its value (escaped, so that it stays one
 * line whatever it holds), and what would do. */
static void
ignored(const char *name, const char *value, const char *want)
{
	char *shown = heist__env_escape(value);
	fprintf(stderr, "heist: %s=\"%s\" ignored: want %s\n", name,
		shown ? shown : "(not shown: out of memory)", want);
	free(shown);
}

#define STR_(x) #x
#define STR(x) STR_(x)

static void
apply_threads(struct heist_config *cfg)
{
	const char *v = getenv("HEIST_NUM_THREADS");
	if (!v || cfg->threads)
		return;
	if (!parse_count(v, 1, HEIST_MAX_THREADS, &cfg->threads))
		ignored("HEIST_NUM_THREADS", v,
			"a number of workers from 1 to " STR(HEIST_MAX_THREADS));
}

/* Whether a equals b, ignoring ASCII case (POSIX's strcasecmp, which C lacks). */
static bool
same_word(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
	return *a == *b;
}

static void
apply_pin(struct heist_config *cfg)
{
	const char *v = getenv("HEIST_PIN");
	if (!v || cfg->pin != HEIST_PIN_NONE)
		return;
	if (same_word(v, "core"))
		cfg->pin = HEIST_PIN_CORE;
	else if (same_word(v, "pu"))
		cfg->pin = HEIST_PIN_PU;
	else if (!same_word(v, "none"))
		ignored("HEIST_PIN", v, "none, core or pu");
}

static void
apply_spares(struct heist_config *cfg)
{
	const char *v = getenv("HEIST_MAX_SPARES");
	if (!v || cfg->max_spares)
		return;
	unsigned n;
	if (same_word(v, "none"))
		cfg->max_spares = HEIST_SPARES_NONE;
	else if (parse_count(v, 0, HEIST_MAX_THREADS, &n))
		cfg->max_spares = n ? n : HEIST_SPARES_NONE;
	else
		ignored("HEIST_MAX_SPARES", v, "none, or a number of spare threads from 0 to "
			STR(HEIST_MAX_THREADS));
}

/* A file name from name's variable, copied; NULL when unset or bad. */
static char *
file_from(const char *name, bool *nomem)
{
	const char *v = getenv(name);
	if (!v)
		return NULL;
	if (heist__process_setid()) {	/* its caller's environment names the file */
		ignored(name, v, "a program that is not set-user-ID or set-group-ID");
		return NULL;
	}
	if (!*v) {
		ignored(name, v, "a file name (%p stands for the process id)");
		return NULL;
	}
	char *copy = strdup(v);
	*nomem |= !copy;
	return copy;
}

static int
apply_profile(struct heist_config *cfg, struct env_files *files)
{
	bool nomem = false;
	files->profile = file_from("HEIST_PROFILE", &nomem);
	files->trace = file_from("HEIST_TRACE", &nomem);
	if (nomem) {
		heist__env_files_free(files);
		return ENOMEM;
	}
	if (!files->profile && !files->trace)
		return 0;
	if (!HEIST_PROFILER) {
		ignored(files->profile ? "HEIST_PROFILE" : "HEIST_TRACE",
			files->profile ? files->profile : files->trace,
			"a libheist built with the profiler (-Dprofiler=true)");
		heist__env_files_free(files);
		return 0;
	}
	bool turned_on = !cfg->profile;
	cfg->profile = true;
	const char *v = getenv("HEIST_PROFILE_EVERY");
	if (cfg->profile_every)
		return 0;	/* the program's own sampling */
	if (v && !parse_count(v, 1, PROFILE_EVERY_MAX, &cfg->profile_every))
		ignored("HEIST_PROFILE_EVERY", v,
			"a number of tasks from 1 to " STR(PROFILE_EVERY_MAX));
	if (!cfg->profile_every && turned_on)
		cfg->profile_every = PROFILE_EVERY_DEFAULT;
	return 0;
}

int
heist__env_apply(struct heist_config *cfg, struct env_files *files)
{
	files->profile = files->trace = NULL;
	if (cfg->ignore_environment)
		return 0;
	apply_threads(cfg);
	apply_pin(cfg);
	apply_spares(cfg);
	return apply_profile(cfg, files);
}

void
heist__env_files_free(struct env_files *files)
{
	free(files->profile);
	free(files->trace);
	files->profile = files->trace = NULL;
}
