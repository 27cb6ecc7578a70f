/* Jobs: work on a thread, answer on the loop; see job.h.
 *
 * A job is counted in js->running from its start until its answer is
 * posted or dropped; while its answer waits for the loop it is on
 * js->posted, so what the loop never ran can be handed over at exit.  Both
 * are under js->mu, which the threads hold only briefly. */
#include "job.h"
#include "http_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct job_entry {
	struct job_set *js;
	job_fn work, done, drop;
	void *ud;
	struct job_entry *prev, *next; /* on js->posted */
};

struct job_set {
	struct hsrv *srv;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* broadcast when running drops */
	int running;
	bool stopping;
	struct job_entry *posted;
};

struct job_set *job_set_new(struct hsrv *srv)
{
	struct job_set *js = calloc(1, sizeof(*js));
	pthread_condattr_t ca;

	if (!js)
		return NULL;
	js->srv = srv;
	pthread_mutex_init(&js->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&js->cv, &ca);
	pthread_condattr_destroy(&ca);
	return js;
}

/* Takes j off js->posted.  Under js->mu. */
static void unlink_posted(struct job_set *js, struct job_entry *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		js->posted = j->next;
	if (j->next)
		j->next->prev = j->prev;
	j->prev = j->next = NULL;
}

/* Loop thread: the answer of a finished job. */
static void job_answer(void *arg)
{
	struct job_entry *j = arg;
	struct job_set *js = j->js;

	pthread_mutex_lock(&js->mu);
	unlink_posted(js, j);
	pthread_mutex_unlock(&js->mu);
	j->done(j->ud);
	free(j);
}

static void *job_thread(void *arg)
{
	struct job_entry *j = arg;
	struct job_set *js = j->js;
	bool posted = false;

	j->work(j->ud);
	pthread_mutex_lock(&js->mu);
	if (!js->stopping) {
		/* On the list before it is posted: the loop may run it at once,
		 * and unlinks it under the same lock. */
		j->next = js->posted;
		if (js->posted)
			js->posted->prev = j;
		js->posted = j;
		posted = hsrv_post(js->srv, job_answer, j) == 0;
		if (!posted)
			unlink_posted(js, j);
	}
	pthread_mutex_unlock(&js->mu);
	if (!posted) {
		j->drop(j->ud);
		free(j);
	}
	/* Counted until here, so that a shutdown that waits for the jobs also
	 * waits for drop.  js may be freed as soon as the lock is let go. */
	pthread_mutex_lock(&js->mu);
	js->running--;
	pthread_cond_broadcast(&js->cv);
	pthread_mutex_unlock(&js->mu);
	return NULL;
}

int job_start(struct job_set *js, job_fn work, job_fn done, job_fn drop, void *ud)
{
	struct job_entry *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (!j)
		return ENOMEM;
	j->js = js;
	j->work = work;
	j->done = done;
	j->drop = drop;
	j->ud = ud;
	pthread_mutex_lock(&js->mu);
	js->running++;
	pthread_mutex_unlock(&js->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, job_thread, j);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pthread_mutex_lock(&js->mu);
		js->running--;
		pthread_cond_broadcast(&js->cv);
		pthread_mutex_unlock(&js->mu);
		free(j);
	}
	return rc;
}

void job_set_stop(struct job_set *js)
{
	pthread_mutex_lock(&js->mu);
	js->stopping = true;
	pthread_mutex_unlock(&js->mu);
}

int job_set_wait(struct job_set *js, long ms)
{
	struct timespec until;
	int left;

	if (ms < 0)
		ms = 0;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&js->mu);
	while (js->running > 0 && pthread_cond_timedwait(&js->cv, &js->mu, &until) != ETIMEDOUT)
		;
	left = js->running;
	pthread_mutex_unlock(&js->mu);
	return left;
}

int job_set_running(struct job_set *js)
{
	int n;

	pthread_mutex_lock(&js->mu);
	n = js->running;
	pthread_mutex_unlock(&js->mu);
	return n;
}

void job_set_free(struct job_set *js, enum job_drain how)
{
	if (!js)
		return;
	/* The loop will not run these; hsrv_free drops its queued tasks
	 * without looking at them. */
	while (js->posted) {
		struct job_entry *j = js->posted;

		unlink_posted(js, j);
		if (how == JOB_DRAIN_DONE)
			j->done(j->ud);
		else
			j->drop(j->ud);
		free(j);
	}
	pthread_cond_destroy(&js->cv);
	pthread_mutex_destroy(&js->mu);
	free(js);
}
