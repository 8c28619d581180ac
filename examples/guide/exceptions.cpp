/* SPDX-License-Identifier: MIT */
// exceptions.cpp - C++ exceptions and heist's C tasks: catch everything inside the
// task, return an int, and carry the exception to the waiter yourself. Run with
// --escape to see what an exception that leaves a task does today: std::terminate.
#include <heist/heist.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

struct parse_job {
	std::string text;
	long value = 0;
	std::exception_ptr error;	// set by the task, rethrown by the waiter
};

// noexcept: should anything escape after all, the process stops here, at once, on
// whatever thread ran the task, instead of unwinding through heist's C frames.
static int parse_task(void *arg) noexcept
{
	auto *job = static_cast<parse_job *>(arg);
	try {
		job->value = std::stol(job->text);	// throws on "x"
		return 0;
	} catch (...) {
		job->error = std::current_exception();
		return EINVAL;	// any nonzero int: the waiter looks at job->error
	}
}

static int escaping_task(void *)
{
	throw std::runtime_error("escaped from a task");
}

int main(int argc, char **argv)
{
	heist_pool *pool = nullptr;
	if (heist_pool_create(&pool, nullptr) != 0)
		return 1;
	if (argc > 1 && std::strcmp(argv[1], "--escape") == 0) {
		heist_future *f = nullptr;
		heist_submit(pool, escaping_task, nullptr, &f);
		heist_future_wait(f);	// never returns: the worker calls std::terminate
		std::puts("not reached");
		return 0;
	}
	parse_job jobs[2];
	jobs[0].text = "42";
	jobs[1].text = "x";
	heist_future *f[2];
	for (int i = 0; i < 2; i++)
		if (heist_submit(pool, parse_task, &jobs[i], &f[i]) != 0)
			return 1;
	int failures = 0;
	for (int i = 0; i < 2; i++) {
		heist_future_wait(f[i]);
		heist_future_release(f[i]);
		try {
			if (jobs[i].error)
				std::rethrow_exception(jobs[i].error);
			std::printf("\"%s\" -> %ld\n", jobs[i].text.c_str(), jobs[i].value);
		} catch (const std::exception &e) {
			std::printf("\"%s\" -> exception: %s\n", jobs[i].text.c_str(), e.what());
			failures++;
		}
	}
	heist_pool_destroy(pool);
	return failures == 1 ? 0 : 1;
}
