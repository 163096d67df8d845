// tests/integ/clients/informer.mjs - the official JavaScript client
// (@kubernetes/client-node, installed here by `npm ci`) against gpuq-sim
// with gpuq-controller and Redis running (tests/integ/test_jsclient.c).
//
//   node tests/integ/clients/informer.mjs KUBECONFIG
//
// Two informers (makeInformer) watch team-a's GpuJobs and pods while
// this script, through the client's typed API classes, makes jobs that
// the controller admits and runs, changes and deletes them:
//   1. start: both informers list and watch; a TeamQuota and the job
//      js-keep (Running, its pod Running) are seen;
//   2. a server-side watch close (POST /sim/v1/close-watches, as an API
//      server restart): the informers reconnect and see js-b created
//      (and its pod), js-keep updated and js-a deleted (and its pod);
//   3. a 410 Gone: the informers resume from the resourceVersion of
//      their last list (the client does not advance it from watch
//      events), so after more changes than the sim's watch window
//      (--watch-window 50) and another close, their watch gets an ERROR
//      event with 410 and they list again. The sim delays their next
//      watch (a fault) so the changes of this step (js-c created,
//      js-keep updated, js-b deleted) happen while they are away.
// Every add, update and delete must reach the informers' handlers, each
// informer must have listed again after the 410, no informer may report
// an error, and at the end each informer's cache must hold exactly what
// the server lists (names and resourceVersions). Every call is the
// client's own and must succeed. Waits are for conditions, with
// deadlines. Exit status 0 when all holds, 1 with the reason on stderr.
import * as k8s from '@kubernetes/client-node';

const NS = 'team-a';
const G = 'gpuq.dev';
const V = 'v1alpha1';
const WAIT_MS = 90000;

const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[2]);
// The client (1.x) refuses a plain-http server unless the cluster says
// skipTLSVerify (config.js, createAgent); the test's sim serves http.
if (kc.getCurrentCluster().server.startsWith('http:'))
  kc.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, skipTLSVerify: true })),
    users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext,
  });
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const server = kc.getCurrentCluster().server;

function log(msg) {
  process.stderr.write(`informer.mjs: ${msg}\n`);
}

async function waitFor(what, cond) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function simPost(path, body) {
  const res = await fetch(server + path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
}

// An informer with every event it delivered, its lists and connects.
async function informer(name, path, listFn) {
  const rec = { name, events: [], lists: 0, connects: 0, errors: [] };
  const inf = k8s.makeInformer(kc, path, async () => {
    rec.lists++;
    return listFn();
  });
  for (const verb of ['add', 'update', 'delete'])
    inf.on(verb, (obj) => rec.events.push({ verb, obj }));
  inf.on('connect', () => rec.connects++);
  inf.on('error', (err) => rec.errors.push(err));
  rec.inf = inf;
  await inf.start();
  return rec;
}

// Waits for an event of verb on an object whose test holds.
function seen(rec, verb, test, what) {
  return waitFor(`${rec.name}: ${verb} of ${what}`, () => {
    if (rec.errors.length) throw new Error(`${rec.name}: informer error: ${rec.errors[0]}`);
    return rec.events.some((e) => e.verb === verb && test(e.obj));
  });
}

const named = (n) => (o) => o.metadata.name === n;
const jobPod = (job) => (o) => (o.metadata.labels || {})['gpuq.dev/job'] === job;

function gpujob(name) {
  return custom.createNamespacedCustomObject({
    group: G, version: V, namespace: NS, plural: 'gpujobs',
    body: {
      apiVersion: `${G}/${V}`, kind: 'GpuJob', metadata: { name, namespace: NS },
      spec: {
        team: NS, replicas: 1, gpusPerReplica: 4, expectedDurationSeconds: 36000,
        template: {
          metadata: { annotations: { 'sim.gpuq.dev/run-seconds': '36000' } },
          spec: { containers: [{ name: 'c', image: 'x' }] },
        },
      },
    },
  });
}

function label(name, value) {
  return custom.patchNamespacedCustomObject({
    group: G, version: V, namespace: NS, plural: 'gpujobs', name,
    body: [{ op: 'add', path: '/metadata/labels', value: { 'js-step': value } }],
  });
}

function deleteJob(name) {
  return custom.deleteNamespacedCustomObject({ group: G, version: V, namespace: NS,
    plural: 'gpujobs', name });
}

const listJobs = () => custom.listNamespacedCustomObject({ group: G, version: V,
  namespace: NS, plural: 'gpujobs' });
const listPods = () => core.listNamespacedPod({ namespace: NS });

// The informer's cache equals the server's list (name -> resourceVersion).
async function inSync(rec, listFn) {
  const want = new Map((await listFn()).items.map((o) => [o.metadata.name,
    o.metadata.resourceVersion]));
  const have = new Map(rec.inf.list(NS).map((o) => [o.metadata.name,
    o.metadata.resourceVersion]));
  return want.size === have.size && [...want].every(([k, v]) => have.get(k) === v);
}

async function main() {
  const jobs = await informer('gpujobs', `/apis/${G}/${V}/namespaces/${NS}/gpujobs`, listJobs);
  const pods = await informer('pods', `/api/v1/namespaces/${NS}/pods`, listPods);

  // 1. start
  await custom.createClusterCustomObject({ group: G, version: V, plural: 'teamquotas',
    body: { apiVersion: `${G}/${V}`, kind: 'TeamQuota', metadata: { name: NS },
      spec: { namespaces: [NS], resources: [{ flavor: '*', nominal: 32 }] } } });
  await core.createNamespacedConfigMap({ namespace: NS,
    body: { metadata: { name: 'js-churn' }, data: { n: '0' } } });
  await gpujob('js-keep');
  await gpujob('js-a');
  await seen(jobs, 'add', named('js-keep'), 'js-keep');
  await seen(jobs, 'update', (o) => o.metadata.name === 'js-keep' &&
    o.status?.phase === 'Running', 'js-keep Running');
  await seen(pods, 'add', jobPod('js-a'), "js-a's pod");
  await seen(pods, 'update', (o) => jobPod('js-keep')(o) && o.status?.phase === 'Running',
    "js-keep's pod Running");
  log('1. informers started, jobs and pods seen: ok');

  // 2. a server-side close of every watch
  const connects = [jobs.connects, pods.connects];
  await simPost('/sim/v1/close-watches');
  await waitFor('both informers to reconnect',
    () => jobs.connects > connects[0] && pods.connects > connects[1]);
  await gpujob('js-b');
  await label('js-keep', 'closed');
  await deleteJob('js-a');
  await seen(jobs, 'add', named('js-b'), 'js-b');
  await seen(jobs, 'update', (o) => o.metadata.name === 'js-keep' &&
    o.metadata.labels?.['js-step'] === 'closed', 'js-keep labelled');
  await seen(jobs, 'delete', named('js-a'), 'js-a');
  await seen(pods, 'add', jobPod('js-b'), "js-b's pod");
  await seen(pods, 'delete', jobPod('js-a'), "js-a's pod");
  log('2. across a server-side watch close: ok');

  // 3. a 410: more changes than the watch window, the next watches
  // delayed, every watch closed, then this step's changes
  for (let i = 1; i <= 60; i++)
    await core.replaceNamespacedConfigMap({ name: 'js-churn', namespace: NS,
      body: { metadata: { name: 'js-churn' }, data: { n: String(i) } } });
  const lists = [jobs.lists, pods.lists];
  for (const resource of ['gpujobs', 'pods'])
    await simPost('/sim/v1/faults', { verb: 'watch', resource, delayMs: 1500, count: 2 });
  await simPost('/sim/v1/close-watches');
  await gpujob('js-c');
  await label('js-keep', 'gone');
  await deleteJob('js-b');
  await waitFor('both informers to list again after the 410',
    () => jobs.lists > lists[0] && pods.lists > lists[1]);
  await seen(jobs, 'add', named('js-c'), 'js-c');
  await seen(jobs, 'update', (o) => o.metadata.name === 'js-keep' &&
    o.metadata.labels?.['js-step'] === 'gone', 'js-keep labelled again');
  await seen(jobs, 'delete', named('js-b'), 'js-b');
  await seen(pods, 'add', jobPod('js-c'), "js-c's pod");
  await seen(pods, 'delete', jobPod('js-b'), "js-b's pod");
  log('3. across a 410 Gone and a relist: ok');

  await waitFor('the gpujobs informer in sync with the server', () => inSync(jobs, listJobs));
  await waitFor('the pods informer in sync with the server', () => inSync(pods, listPods));
  for (const r of [jobs, pods])
    if (r.errors.length) throw new Error(`${r.name}: informer error: ${r.errors[0]}`);
  await jobs.inf.stop();
  await pods.inf.stop();
  log(`caches in sync; gpujobs: ${jobs.events.length} events, ${jobs.lists} lists, ` +
    `${jobs.connects} connects; pods: ${pods.events.length} events, ${pods.lists} lists, ` +
    `${pods.connects} connects: ok`);
}

main().then(() => process.exit(0), (err) => {
  log(`FAIL: ${err.stack || err}${err.body ? ` (${JSON.stringify(err.body)})` : ''}`);
  process.exit(1);
});
