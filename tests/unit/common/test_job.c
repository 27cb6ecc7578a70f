/* Unit tests for common/job: work runs off the loop and done on it, in
 * one piece per job; a stopped set drops what finishes; job_set_wait
 * counts and times out; job_set_free hands what the loop never ran to done
 * or drop; exactly one of done and drop runs for every job. */
#include "common/http_server.h"
#include "common/job.h"
#include "tests/unit/unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

struct probe {
	pthread_t loop;         /* the loop thread, when it runs */
	bool loop_runs;
	atomic_int works, dones, drops;
	atomic_int done_off_loop; /* done ran on another thread */
	atomic_int work_on_loop;  /* work ran on the loop thread */
	useconds_t work_us;
	struct hsrv *srv;
};

static void *run_loop(void *arg)
{
	hsrv_run(arg);
	return NULL;
}

static void work(void *ud)
{
	struct probe *p = ud;

	if (p->loop_runs && pthread_equal(pthread_self(), p->loop))
		atomic_fetch_add(&p->work_on_loop, 1);
	if (p->work_us)
		usleep(p->work_us);
	atomic_fetch_add(&p->works, 1);
}

static void done(void *ud)
{
	struct probe *p = ud;

	if (p->loop_runs && !pthread_equal(pthread_self(), p->loop))
		atomic_fetch_add(&p->done_off_loop, 1);
	atomic_fetch_add(&p->dones, 1);
}

static void drop(void *ud)
{
	atomic_fetch_add(&((struct probe *)ud)->drops, 1);
}

static void stop_loop(void *ud)
{
	hsrv_stop(ud);
}

/* Waits until cond holds, for up to two seconds. */
#define WAIT_FOR(cond) \
	for (int w_ = 0; w_ < 200 && !(cond); w_++) \
		usleep(10 * 1000)

START_TEST(work_off_the_loop_answer_on_it)
{
	struct err e = ERR_INIT;
	struct probe p;
	struct job_set *js;

	memset(&p, 0, sizeof(p));
	p.srv = hsrv_new(&(struct hsrv_opts){.port = -1}, &e);
	ck_assert_msg(p.srv, "%s", e.msg);
	js = job_set_new(p.srv);
	ck_assert_ptr_nonnull(js);
	p.loop_runs = true;
	ck_assert_int_eq(pthread_create(&p.loop, NULL, run_loop, p.srv), 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(job_start(js, work, done, drop, &p), 0);
	ck_assert_int_eq(job_set_wait(js, 5000), 0);
	WAIT_FOR(atomic_load(&p.dones) == 20);
	ck_assert_int_eq(atomic_load(&p.works), 20);
	ck_assert_int_eq(atomic_load(&p.dones), 20);
	ck_assert_int_eq(atomic_load(&p.drops), 0);
	ck_assert_int_eq(atomic_load(&p.work_on_loop), 0);
	ck_assert_int_eq(atomic_load(&p.done_off_loop), 0);
	hsrv_post(p.srv, stop_loop, p.srv);
	pthread_join(p.loop, NULL);
	job_set_free(js, JOB_DRAIN_DROP);
	ck_assert_int_eq(atomic_load(&p.drops), 0); /* nothing was left */
	hsrv_free(p.srv);
}
END_TEST

START_TEST(wait_counts_and_times_out)
{
	struct err e = ERR_INIT;
	struct probe p;
	struct job_set *js;

	memset(&p, 0, sizeof(p));
	p.work_us = 300 * 1000;
	p.srv = hsrv_new(&(struct hsrv_opts){.port = -1}, &e);
	ck_assert_msg(p.srv, "%s", e.msg);
	js = job_set_new(p.srv);
	ck_assert_int_eq(job_set_running(js), 0);
	ck_assert_int_eq(job_set_wait(js, 0), 0);
	ck_assert_int_eq(job_start(js, work, done, drop, &p), 0);
	ck_assert_int_eq(job_start(js, work, done, drop, &p), 0);
	ck_assert_int_eq(job_set_running(js), 2);
	ck_assert_int_eq(job_set_wait(js, 20), 2); /* times out with both at work */
	ck_assert_int_eq(job_set_wait(js, 5000), 0);
	ck_assert_int_eq(atomic_load(&p.works), 2);
	/* The loop never ran: both answers are still queued.  done runs them
	 * here, on this thread. */
	ck_assert_int_eq(atomic_load(&p.dones), 0);
	job_set_free(js, JOB_DRAIN_DONE);
	ck_assert_int_eq(atomic_load(&p.dones), 2);
	ck_assert_int_eq(atomic_load(&p.drops), 0);
	hsrv_free(p.srv);
}
END_TEST

START_TEST(a_stopped_set_drops)
{
	struct err e = ERR_INIT;
	struct probe p;
	struct job_set *js;

	memset(&p, 0, sizeof(p));
	p.srv = hsrv_new(&(struct hsrv_opts){.port = -1}, &e);
	ck_assert_msg(p.srv, "%s", e.msg);
	js = job_set_new(p.srv);
	/* One answer queued before the stop, two jobs that end after it. */
	ck_assert_int_eq(job_start(js, work, done, drop, &p), 0);
	ck_assert_int_eq(job_set_wait(js, 5000), 0);
	p.work_us = 100 * 1000;
	ck_assert_int_eq(job_start(js, work, done, drop, &p), 0);
	ck_assert_int_eq(job_start(js, work, done, drop, &p), 0);
	job_set_stop(js);
	ck_assert_int_eq(job_set_wait(js, 5000), 0);
	ck_assert_int_eq(atomic_load(&p.works), 3);
	ck_assert_int_eq(atomic_load(&p.drops), 2); /* dropped on their own threads */
	ck_assert_int_eq(atomic_load(&p.dones), 0);
	job_set_free(js, JOB_DRAIN_DROP);      /* the queued one */
	ck_assert_int_eq(atomic_load(&p.drops), 3);
	ck_assert_int_eq(atomic_load(&p.dones), 0);
	hsrv_free(p.srv);
}
END_TEST

Suite *suite_job(void)
{
	Suite *s = suite_create("job");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, work_off_the_loop_answer_on_it);
	tcase_add_test(tc, wait_counts_and_times_out);
	tcase_add_test(tc, a_stopped_set_drops);
	suite_add_tcase(s, tc);
	return s;
}
