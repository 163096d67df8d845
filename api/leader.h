/* api/leader.h - leader election on a coordination.k8s.io/v1 Lease, as
 * client-go's tools/leaderelection does it: the holder renews the lease
 * every retry period; others take it over once it has not been renewed
 * for a lease duration, judged by their own clock from when they last saw
 * it change (observedTime), never by comparing clocks across machines. A
 * leader that cannot renew within the renew deadline stops leading at
 * once (on_stop), before another can take over.
 *
 * Defaults are client-go's: 15 s lease, 10 s renew deadline, 2 s retry.
 * All real time (leases never follow the virtual clock, DESIGN §5).
 * Loop thread only. */
#ifndef GQ_API_LEADER_H
#define GQ_API_LEADER_H
#include "api/client.h"

struct gq_leader;

struct gq_leader_opts {
  const char *ns, *name;     /* the Lease */
  const char *identity;      /* this candidate (e.g. pod name) */
  int64_t lease_ms;          /* 15000 */
  int64_t renew_deadline_ms; /* 10000 */
  int64_t retry_ms;          /* 2000 */
  void (*on_start)(void *arg); /* became leader */
  void (*on_stop)(void *arg);  /* stopped leading (lost or released) */
  void *arg;
  int release_on_cancel;     /* clear the holder on stop (client-go's
                                ReleaseOnCancel; off by default there) */
};

/* Starts campaigning. Returns the elector. */
struct gq_leader *gq_leader_start(struct gq_kclient *c,
                                  const struct gq_leader_opts *o);

/* 1 while this candidate leads. */
int gq_leader_is_leader(const struct gq_leader *l);

/* Stops campaigning; a leader gets on_stop and, with release_on_cancel,
 * releases the lease (holder cleared, so a successor need not wait a
 * lease duration). The elector is freed once any release has been
 * answered (run the loop). */
void gq_leader_stop(struct gq_leader *l);

#endif
