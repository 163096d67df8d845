/* sim/clock.c - /sim/v1/clock: the sim's virtual clock for tests.
 *
 * The virtual clock is a function of the real one (base/clock.h), and the
 * controller computes the same function from the same --time-scale and
 * --time-epoch: the sim cannot jump its clock forward without the two
 * disagreeing. What a test needs instead is to know that virtual time T
 * has passed *and that the sim has done its own work up to T*: a real
 * sleep on a loaded machine lets the clock pass T while the sim's loop has
 * not yet run the timed events due before T, and a check that "nothing
 * happened by T" then passes without having tested anything.
 *
 * So a wait (POST) is answered only once T is settled:
 *   - the virtual clock shows T or later,
 *   - no timed event due at or before T is left in the engine's heap (each
 *     has run, and so have those it queued at or before T),
 *   - no pod is left marked for reconciling (what those events changed has
 *     been acted on: a pod started, an Unschedulable pod looked at again),
 *   - no graceful deletion of the store is overdue.
 * Waiters are checked by one uv timer, armed for the earliest real time a
 * waiter can settle, then every millisecond while the sim still has work
 * due by T. */
#include "sim/engine.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_DEFAULT_MS 20000 /* real: below the test client's 30 s */
#define WAIT_MAX_MS 600000

struct gq_sim_clock_wait {
  struct gq_http_req *req;
  int64_t until_vms;     /* virtual Unix ms */
  int64_t deadline_mono; /* real monotonic ms: 504 then */
  struct gq_sim_clock_wait *next;
};

/* The clock as JSON (new reference). */
static json_t *clock_json(struct gq_sim *s)
{
  const struct gq_clock *c = gq_clock_get();
  int64_t now = gq_clock_now_ms();
  int64_t next = s->engine ? gq_sim_tev_next_due(s->engine) : INT64_MAX;
  char ts[40] = "";

  gq_time_format_micro(now, ts, sizeof(ts));
  return json_pack("{s:I, s:s, s:f, s:I, s:I, s:o}", "nowMs", (json_int_t)now,
                   "now", ts, "scale", c->scale, "epochMs",
                   (json_int_t)c->epoch_ms, "realMs",
                   (json_int_t)gq_clock_real_ms(), "nextEventMs",
                   next == INT64_MAX ? json_null()
                                     : json_integer((json_int_t)next));
}

/* Has the sim done its own work up to virtual time t (file comment)? */
static int settled(struct gq_sim *s, int64_t t)
{
  struct gq_sim_engine *e = s->engine;

  if (gq_clock_now_ms() < t)
    return 0;
  if (e && (gq_sim_tev_next_due(e) <= t || gq_sim_engine_busy(e)))
    return 0;
  return !(s->n_pending &&
           s->pending[0].due_ms <= (uint64_t)gq_clock_mono_ms());
}

static void answer(struct gq_sim *s, struct gq_sim_clock_wait *w)
{
  json_t *c = clock_json(s);

  json_object_set_new(c, "untilMs", json_integer((json_int_t)w->until_vms));
  gq_sim_reply(w->req, 200, c);
}

static void time_out(struct gq_sim *s, struct gq_sim_clock_wait *w)
{
  char msg[300];
  int64_t next = s->engine ? gq_sim_tev_next_due(s->engine) : INT64_MAX;

  snprintf(msg, sizeof(msg),
           "virtual time %lld not settled within the wait's timeout (virtual "
           "now %lld, next timed event %lld, pods to reconcile: %s)",
           (long long)w->until_vms, (long long)gq_clock_now_ms(),
           next == INT64_MAX ? -1LL : (long long)next,
           s->engine && gq_sim_engine_busy(s->engine) ? "yes" : "no");
  gq_sim_status(w->req, 504, "Timeout", msg, NULL);
}

/* Real ms until waiter w can next settle or time out (>= 1). */
static uint64_t wake_in(const struct gq_sim_clock_wait *w, int64_t now_v,
                        int64_t now_mono)
{
  uint64_t d = now_v < w->until_vms
                   ? gq_clock_real_delay_ms(w->until_vms - now_v)
                   : 1; /* T has passed: the sim still has work due */
  int64_t left = w->deadline_mono - now_mono;

  if (left < (int64_t)d)
    d = left > 0 ? (uint64_t)left : 0;
  return d ? d : 1;
}

static void on_clock_timer(uv_timer_t *t);

/* Answers every waiter that has settled or timed out, then re-arms the
 * timer for the rest. */
static void check_waiters(struct gq_sim *s)
{
  struct gq_sim_clock_wait **pw = &s->clock_waits, *w;
  int64_t now_v = gq_clock_now_ms(), mono = gq_clock_mono_ms();
  uint64_t next = UINT64_MAX;

  while ((w = *pw)) {
    int ok = settled(s, w->until_vms);

    if (ok || mono >= w->deadline_mono) {
      *pw = w->next;
      if (ok)
        answer(s, w);
      else
        time_out(s, w);
      free(w);
      continue;
    }
    if (wake_in(w, now_v, mono) < next)
      next = wake_in(w, now_v, mono);
    pw = &w->next;
  }
  if (next == UINT64_MAX)
    uv_timer_stop(&s->clock_timer);
  else
    uv_timer_start(&s->clock_timer, on_clock_timer, next, 0);
}

static void on_clock_timer(uv_timer_t *t)
{
  check_waiters(t->data);
}

/* Reads the wait's target and timeout from body: {"untilMs": T} or
 * {"seconds": N}, optional "timeoutMs". Returns 0, or -1 with msg. */
static int parse_wait(const json_t *body, int64_t *until, int64_t *timeout,
                      char *msg, size_t len)
{
  const json_t *u = json_object_get(body, "untilMs");
  const json_t *sec = json_object_get(body, "seconds");
  const json_t *to = json_object_get(body, "timeoutMs");

  if (!json_is_object(body) || !u == !sec ||
      (u && !json_is_integer(u)) ||
      (sec && (!json_is_number(sec) || json_number_value(sec) < 0 ||
               json_number_value(sec) > 1e9))) {
    snprintf(msg, len, "want {\"untilMs\": <virtual Unix ms>} or "
             "{\"seconds\": <virtual seconds, 0..1e9>}, optionally with "
             "\"timeoutMs\"");
    return -1;
  }
  *timeout = WAIT_DEFAULT_MS;
  if (to && (!json_is_integer(to) || json_integer_value(to) < 1 ||
             json_integer_value(to) > WAIT_MAX_MS)) {
    snprintf(msg, len, "timeoutMs: want real milliseconds, 1..%d",
             WAIT_MAX_MS);
    return -1;
  }
  if (to)
    *timeout = json_integer_value(to);
  *until = u ? json_integer_value(u)
             : gq_clock_now_ms() +
                   (int64_t)ceil(json_number_value(sec) * 1000.0);
  return 0;
}

/* POST /sim/v1/clock: waits until the target is settled. */
static void wait_req(struct gq_sim *s, struct gq_http_req *req)
{
  size_t len;
  const char *text = gq_http_body(req, &len);
  json_t *body = json_loadb(text, len, 0, NULL);
  struct gq_sim_clock_wait *w;
  int64_t until = 0, timeout = 0, now = gq_clock_now_ms();
  char msg[300];

  msg[0] = '\0';
  if (parse_wait(body, &until, &timeout, msg, sizeof(msg)) == 0 &&
      until > now && gq_clock_real_delay_ms(until - now) > (uint64_t)timeout)
    snprintf(msg, sizeof(msg), "virtual time %lld is %llu real ms away, "
             "beyond timeoutMs %lld", (long long)until,
             (unsigned long long)gq_clock_real_delay_ms(until - now),
             (long long)timeout);
  json_decref(body);
  if (msg[0]) {
    gq_sim_status(req, 400, "BadRequest", msg, NULL);
    return;
  }
  w = gq_xcalloc(1, sizeof(*w));
  w->req = req;
  w->until_vms = until;
  w->deadline_mono = gq_clock_mono_ms() + timeout;
  w->next = s->clock_waits;
  s->clock_waits = w;
  check_waiters(s); /* answers at once when T is settled already */
}

void gq_sim_clock_serve(struct gq_sim *s, struct gq_http_req *req)
{
  const char *method = gq_http_method(req);

  if (!strcmp(method, "GET"))
    gq_sim_reply(req, 200, clock_json(s));
  else if (!strcmp(method, "POST"))
    wait_req(s, req);
  else
    gq_sim_status(req, 405, "MethodNotAllowed",
                  "/sim/v1/clock takes GET (read) or POST (wait)", NULL);
}

void gq_sim_clock_init(struct gq_sim *s)
{
  uv_timer_init(s->loop, &s->clock_timer);
  s->clock_timer.data = s;
}

void gq_sim_clock_stop(struct gq_sim *s)
{
  while (s->clock_waits) {
    struct gq_sim_clock_wait *w = s->clock_waits;

    s->clock_waits = w->next;
    gq_sim_status(w->req, 503, "ServiceUnavailable",
                  "gpuq-sim is shutting down", NULL);
    free(w);
  }
  uv_close((uv_handle_t *)&s->clock_timer, NULL);
}
