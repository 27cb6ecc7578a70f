/* Work on a thread, answer on the loop.
 *
 * A daemon's slow request (a node call, a checkpoint, a download) runs on a
 * detached thread of its own so the hsrv loop keeps serving; when the work
 * is done its answer (typically a deferred response, hsrv_defer) is given on
 * the loop thread.  A job set does the bookkeeping around that: it counts
 * the threads so shutdown can wait for them, posts each answer to the loop,
 * drops the answers nobody will take once the program stops, and at exit
 * hands over the answers that were posted but that the loop never ran.
 *
 * Each job has three functions of the same ud:
 *   work(ud)  on the job's thread;
 *   done(ud)  then on the loop thread: gives the answer and releases ud;
 *   drop(ud)  instead of done when the answer will not be given (the set
 *             was stopped, posting failed for want of memory, or
 *             job_set_free(.., JOB_DRAIN_DROP) found it still queued):
 *             releases ud without touching the loop's objects.
 * Exactly one of done and drop runs for every job that started. */
#ifndef CLOCHE_JOB_H
#define CLOCHE_JOB_H

struct hsrv;
struct job_set;

typedef void (*job_fn)(void *ud);

/* A set whose answers srv's loop runs.  NULL when out of memory. */
struct job_set *job_set_new(struct hsrv *srv);

/* Runs work(ud) on a new detached thread, then done(ud) on the loop thread
 * (or drop(ud), see above).  Any thread.  Returns 0, or the error of
 * pthread_create (or ENOMEM): nothing was started and ud is still the
 * caller's. */
int job_start(struct job_set *js, job_fn work, job_fn done, job_fn drop, void *ud);

/* From now on a job that finishes drops its answer (on its own thread)
 * instead of posting it: for a program that stops and will not turn its
 * loop much longer.  Jobs already posted stay posted.  Any thread. */
void job_set_stop(struct job_set *js);

/* Waits up to ms for the running jobs to finish (work done and the answer
 * posted or dropped).  Returns how many still run: 0 when all finished. */
int job_set_wait(struct job_set *js, long ms);

/* How many jobs run now. */
int job_set_running(struct job_set *js);

/* What job_set_free does with the answers posted but never run. */
enum job_drain {
	JOB_DRAIN_DONE, /* run done(ud): released the normal way (nothing is sent any more) */
	JOB_DRAIN_DROP, /* run drop(ud) */
};

/* Frees js.  Only once the loop has stopped for good (hsrv_run returned
 * and will not run again) and no job runs (job_set_wait returned 0), and
 * before hsrv_free.  Answers still queued for the loop are handed, on the
 * calling thread, to done or drop as `how` says.  NULL is fine. */
void job_set_free(struct job_set *js, enum job_drain how);

#endif
