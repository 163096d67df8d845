/* tests/support/proc.h - child processes for integration tests: gpuq-sim on
 * a private loopback port with its own temporary directory, the real
 * kubectl against it (fresh --cache-dir per sim), and raw HTTP requests.
 * Test code only: everything here blocks. */
#ifndef GQ_TEST_PROC_H
#define GQ_TEST_PROC_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct gq_test_sim {
  pid_t pid;
  char dir[256];        /* temporary directory, removed by stop */
  char kubeconfig[320]; /* written by the sim once it serves */
  char cache[320];      /* kubectl --cache-dir */
  char url[128];        /* from the sim's first stdout line */
  char log[320];        /* the sim's stderr */
};

/* Starts build/gpuq-sim --listen 127.0.0.1:0 --kubeconfig-out DIR/kubeconfig
 * --crds crds plus extra_args (NULL-terminated, may be NULL), and waits
 * (up to 20 s) for the kubeconfig to appear. Returns 0 or -1 (message on
 * stderr with the sim's log). */
int gq_test_sim_start(struct gq_test_sim *s, const char *const *extra_args);

/* SIGTERM, wait (SIGKILL after 5 s), remove the directory. Returns the
 * sim's exit status (0 = clean shutdown), or -1 if it had to be killed. */
int gq_test_sim_stop(struct gq_test_sim *s);

/* Waits up to timeout_ms for the sim to exit on its own (a finished
 * replay). Returns its exit status, or -1 if it did not exit or was killed
 * by a signal (then its log goes to stderr). The directory stays until
 * gq_test_sim_stop(). */
int gq_test_sim_wait(struct gq_test_sim *s, int timeout_ms);

struct gq_test_out {
  int status; /* exit status, or -1 */
  char *out;  /* stdout (heap, NUL-terminated) */
  char *err;  /* stderr */
};

/* Runs kubectl --kubeconfig K --cache-dir C <args...> (NULL-terminated)
 * with stdin_text on stdin (NULL = empty), waits for it (60 s cap) and
 * captures its output. Returns its exit status. */
int gq_test_kubectl(const struct gq_test_sim *s, struct gq_test_out *o,
                    const char *stdin_text, ...);
void gq_test_out_free(struct gq_test_out *o);

/* Runs kubectl <args...> (NULL-terminated) the way a plugin user does:
 * no flags before the plugin name (kubectl would not find the plugin),
 * KUBECONFIG set to the sim's kubeconfig and the build directory (where
 * kubectl-gpuq is) first on PATH; empty stdin, 60 s cap. Returns the exit
 * status; output in *o (free with gq_test_out_free()). */
int gq_test_kubectl_plugin(const struct gq_test_sim *s, struct gq_test_out *o,
                           ...);

/* gq_test_kubectl_plugin(sim, o, args...) that fails the running cmocka
 * test, showing both outputs, unless kubectl exits with want; the output
 * stays in *o (free with gq_test_out_free()). */
#define GQ_TEST_PLUGIN(sim, o, want, ...)                                    \
  do {                                                                       \
    gq_test_kubectl_plugin((sim), (o), __VA_ARGS__, NULL);                   \
    if ((o)->status != (want))                                               \
      fail_msg("kubectl exit %d (want %d)\nstdout: %s\nstderr: %s",          \
               (o)->status, (want), (o)->out, (o)->err);                     \
  } while (0)

/* gq_test_kubectl(sim, o, stdin_text, args...) that fails the running
 * cmocka test, showing both outputs, unless kubectl exits with want. */
#define GQ_TEST_KUBECTL(sim, o, want, stdin_text, ...)                       \
  do {                                                                       \
    gq_test_kubectl((sim), (o), (stdin_text), __VA_ARGS__, NULL);            \
    if ((o)->status != (want))                                               \
      fail_msg("kubectl exit %d (want %d)\nstdout: %s\nstderr: %s",          \
               (o)->status, (want), (o)->out, (o)->err);                     \
  } while (0)

/* Fails the running cmocka test unless text contains needle. */
void gq_test_assert_has(const char *text, const char *needle);

/* Decodes text as one JSON document, or fails the running cmocka test
 * showing it. Returns a new reference. */
json_t *gq_test_parse_json(const char *text);

/* Runs argv (NULL-terminated; argv[0] looked up on PATH) with empty stdin,
 * its scratch files in dir (an existing directory), 60 s cap. Returns the
 * exit status (-1 if it did not end); output in *o. */
int gq_test_run(const char *dir, const char *const *argv,
                struct gq_test_out *o);
/* gq_test_run() with a cap of cap_ms instead of 60 s (a client test
 * script with its own deadlines); killed with SIGKILL at the cap (status
 * -1). */
int gq_test_run_for(const char *dir, const char *const *argv,
                    struct gq_test_out *o, int cap_ms);

/* Starts kubectl in the background with stdout and stderr to out_path;
 * returns its pid. */
pid_t gq_test_kubectl_bg(const struct gq_test_sim *s, const char *out_path,
                         ...);

/* Waits until the file at path contains needle (up to timeout_ms);
 * returns 1 if it did. A deadline, not a sleep: the wait ends as soon as
 * the text appears. */
int gq_test_wait_file(const char *path, const char *needle, int timeout_ms);

/* One HTTP request with libcurl: method, url (the sim's url + path), body
 * (may be NULL), content type (may be NULL), bearer token (may be NULL).
 * Returns the status code (or -1) and the body in *resp (heap). An https
 * URL is verified against the CA file named by $GQ_TEST_CAINFO if set,
 * else the system's. */
int gq_test_http(const char *method, const char *url, const char *body,
                 const char *ctype, const char *token, char **resp);

/* An answer of gq_test_http_ex(): heap strings, freed by
 * gq_test_http_resp_free(). */
struct gq_test_http_resp {
  char *body;    /* NUL-terminated; may hold NULs (protobuf): see len */
  size_t len;    /* bytes of body */
  char *headers; /* the response's header lines, as received */
};

/* gq_test_http() with request header lines of our own ("Accept: ...",
 * NULL-terminated, may be NULL) instead of a token, and the response's
 * headers. Returns the status code (or -1); *r is filled either way. */
int gq_test_http_ex(const char *method, const char *url, const char *body,
                    const char *ctype, const char *const *headers,
                    struct gq_test_http_resp *r);
void gq_test_http_resp_free(struct gq_test_http_resp *r);

/* Fails the running cmocka test unless the sim's invariant checker reports
 * 0 violations and exactly 'misses' placement misses (GET /sim/v1/report). */
void gq_test_sim_expect_clean(const struct gq_test_sim *s, long misses);

/* Calls the sim: method on s->url + path with a JSON body (may be NULL),
 * and fails the running cmocka test unless the status is 'want'. Returns
 * the decoded response (new reference; NULL if it is not JSON). */
json_t *gq_test_sim_call(const struct gq_test_sim *s, const char *method,
                         const char *path, const char *body, int want);

/* The sim's virtual time, Unix ms (GET /sim/v1/clock). Fails the running
 * cmocka test if the sim does not answer. */
int64_t gq_test_sim_now_ms(const struct gq_test_sim *s);

/* Waits until virtual time until_ms (Unix ms) is settled in the sim (POST
 * /sim/v1/clock, docs/sim.md): its clock shows until_ms and it has run all
 * the timed work due by then (pods finished, checkpoints written, drain
 * retries, delayed starts) and reconciled what that changed. This is what
 * a negative check needs ("X did not happen by T"): a real sleep can end
 * before a loaded sim has done that work. The controller's own reaction is
 * not covered: wait for a positive signal of it where there is one. Fails
 * the running cmocka test unless the sim answers 200 (504 when it has not
 * settled within 20 real seconds; 400 when until_ms is further away than
 * that). Returns the sim's virtual time at the answer (>= until_ms). */
int64_t gq_test_sim_wait_until(const struct gq_test_sim *s, int64_t until_ms);

/* gq_test_sim_wait_until() for 'seconds' virtual seconds after the sim
 * receives the request (so at least that long after the call). */
int64_t gq_test_sim_wait_virtual(const struct gq_test_sim *s, double seconds);

/* A gpuq-controller child process against a sim and a Redis. */
struct gq_test_ctl {
  pid_t pid;
  char log[400];        /* its stderr, in the sim's directory */
  int metrics_port;     /* 0 unless started with metrics */
};

/* Starts build/gpuq-controller --kubeconfig <sim's> --redis redis_url
 * --log-level debug plus extra_args (NULL-terminated, may be NULL), with its
 * log in the sim's directory (name: ctl-<n>.log, n counting starts). With
 * metrics, it listens on 127.0.0.1 at a free port (metrics_port). Returns 0
 * or -1. The controller runs until stopped. */
int gq_test_ctl_start(struct gq_test_ctl *c, const struct gq_test_sim *s,
                      const char *redis_url, int metrics,
                      const char *const *extra_args);

/* Stops it: SIGTERM, wait up to 15 s (then SIGKILL). Returns its exit
 * status (0 = clean), or -1 if it was killed or had died by a signal (its
 * log then goes to stderr). */
int gq_test_ctl_stop(struct gq_test_ctl *c);

/* Stops the controller, then the sim (gq_test_ctl_stop(),
 * gq_test_sim_stop()): a test's teardown. Returns 0 if both stopped
 * cleanly, else -1. */
int gq_test_ctl_sim_stop(struct gq_test_ctl *c, struct gq_test_sim *s);

/* SIGKILLs it (a crash) and reaps it. */
void gq_test_ctl_kill(struct gq_test_ctl *c);

/* Waits up to timeout_ms for the JSONPath-like dotted field 'path' (e.g.
 * "status.phase") of the object at API path 'obj' to equal 'want' (a string
 * value) in the sim; returns 1 if it did. A deadline, not a sleep. */
int gq_test_wait_field(const struct gq_test_sim *s, const char *obj,
                       const char *path, const char *want, int timeout_ms);

/* Makes a self-signed certificate for 127.0.0.1 with the openssl tool:
 * dir/name.crt and dir/name.key (paths into crt and key, 300 bytes each).
 * Returns 0, or -1 if openssl failed. */
int gq_test_make_cert(const char *dir, const char *name, char *crt, char *key);

#endif
