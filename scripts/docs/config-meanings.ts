// What each configuration key means, for the README's configuration table
// (scripts/docs/config-table.ts). A key left out here is described by its
// schema's `description`; the generator stops on a key with neither and on an
// entry here for a key the schema does not have.
export const CONFIG_MEANINGS: Record<string, string> = {
  'backend.kind': '`soft` (RoCEv2 over UDP/4791 in user space) or `ibv` (libibverbs)',
  'backend.device': 'network interface (soft) or RDMA device (ibv); its NUMA node decides where the engine runs',
  'backend.address': 'soft: the IPv4 address this device owns (RoCEv2 always uses port 4791, so one device per address)',
  'backend.port': 'ibv: the port of the RDMA device (must be active)',
  'backend.gidIndex': "ibv: the source GID entry; unset = the RoCE v2 IPv4-mapped GID of the port's interface, chosen and logged (`gidReport` in `/v1/device`)",
  'engine.idleStrategy': '`spin`, `yield`, `backoff` (spin → yield → park in epoll); `auto` = backoff below 4 CPUs, spin otherwise',
  'engine.cpus': "CPUs the engine may use; empty = the device's NUMA node",
  'engine.backoff.spins': 'the backoff ladder: empty duty cycles spun before yielding',
  'engine.backoff.yields': 'then `sched_yield` calls before parking',
  'engine.backoff.minParkNs': 'then the first park in epoll (ns), doubled on each empty cycle',
  'engine.backoff.maxParkNs': 'up to this (ns): an idle engine still completes a duty cycle this often',
  'engine.lendWhenParked':
    "`true`: while the engine thread is parked, the JS thread's publishes and control calls run its duty cycle on the JS thread at once instead of waking it (13–23 µs on a 2-CPU host); `false`: always woken",
  'engine.ringBytes': 'each JS ↔ engine ring (a power of two)',
  'control.host': 'control plane listen address (loopback unless you mean it)',
  'control.port': 'control plane port',
  'control.tls.certFile':
    'PEM certificate (chain, leaf first) for https; with `control.tls.keyFile` the control plane serves https only (README "TLS"); checked at start: missing, unreadable, expired or not yet valid is exit 2',
  'control.tls.keyFile': 'its unencrypted PEM private key; one that does not match the certificate is exit 2',
  'control.tls.clientCaFile': 'PEM CA bundle: when set, every client must present a certificate it signed (mutual TLS; `qpgate ... --cert/--key`)',
  'control.allowPlaintextOnNetwork':
    '`false`: a `control.host` off loopback without `control.tls` is refused at start (exit 2); `true` serves plain http there, bearer tokens and session rkeys readable on the network',
  'control.tokens':
    'bearer tokens, names unique; with none, an admin token is generated at start and written to `<state.dir>/admin.token` (mode 0600)',
  'control.tokens[].name': 'its name, unique among the tokens',
  'control.tokens[].scope': '`read` may GET, `admin` may do anything',
  'control.tokens[].token': 'the secret, at least 16 characters',
  'control.tokens[].roles':
    'entitlements for `POST /v1/sessions`: `trading`, `risk`, `recovery`; left out, a `read` token has none and an `admin` token (the generated one too) has all',
  'control.tokens[].accounts': 'accounts its trading and risk sessions may use (`["1001", ...]` or `["*"]`); left out as for `roles`',
  'control.tokens[].channels': 'feed channels its recovery sessions may ask for (`[1, 2]` or `["*"]`); left out as for `roles`',
  'control.sessions.maxPerToken':
    'RC sessions (trading, risk, recovery) one token may hold at once, connected or not, until closed or reopened; beyond, `POST /v1/sessions` is 429, counted in `qpgate_control_sessions_refused_total{limit}`',
  'control.sessions.maxTotal': 'the same for the whole gateway',
  'control.sessions.maxNamesPerToken':
    'session names one token may ever use; a name is kept for good in `sessions.json` (its id holds the journal\'s state for it: app_seqs, answers its client may still ask for, client order ids), so a new name past this is 429 (`limit="maxNamesPerToken"`) and the file holds at most tokens × this',
  'control.health.engineStaleMs':
    '`/healthz` is 503 once the engine has completed no duty cycle for this long (ms; more than twice `engine.backoff.maxParkNs`, which an idle engine cycles within)',
  'control.metricsAuth': '`token`: `GET /metrics` needs a bearer token of any scope (it names QPNs and session names); `none`: open',
  'log.level': 'pino level; `PUT /v1/log-level` changes it while running',
  'state.dir':
    "journal, `sessions.json` and generated secrets; locked (`flock` on `qpgate.lock`, holding the pid) for the life of the gateway: a second gateway on it exits 2 naming the directory and the holder's pid, before it writes anything there",
  'slo.evaluationInterval': 'how often the latency objectives are evaluated',
  'slo.objectives': 'latency SLOs, evaluated over sliding windows (see [Metrics](#metrics))',
  'slo.objectives[].name': 'the `slo` label of its metrics: lower case, digits, `_ . -`',
  'slo.objectives[].latency': 'which latency: `tick_publish` (publish call → on the wire) or `order_ack` (order in → answer posted)',
  'slo.objectives[].percentile': 'the percentile judged, in (0, 100)',
  'slo.objectives[].thresholdUs': 'the latency (µs) the percentile must stay at or below',
  'slo.objectives[].windows': 'the windows it is judged over, each on its own (`10s`, `1m`, `10m`, ...)',
  'feeds.enabled': 'publish the feed (the embedded default runs the synthetic source)',
  'feeds.channels':
    'the channels, each an A line and an optional B line (every frame is sent on both). A channel reserves `ring.bytes + 16 B × ring.frames` (retransmission ring) `+ 256 B × snapshotSlots + 320 B + 16 B × 2 × snapshotSlots rounded up to a power of two` (snapshot store and its key index), about 69.5 MiB by default, allocated and touched when the feed starts, off the engine thread',
  'feeds.channels[].id': 'the channel id in every frame',
  'feeds.channels[].groupA': "line A's IPv4 multicast group",
  'feeds.channels[].groupB': "line B's group",
  'feeds.channels[].frameSize': 'bytes of UD payload per frame',
  'feeds.channels[].heartbeatMs': 'a heartbeat when the channel has been idle this long (ms)',
  'feeds.channels[].ring.frames': 'frames the retransmission ring keeps for recovery',
  'feeds.channels[].ring.bytes': "the ring's bytes",
  'feeds.channels[].snapshotSlots': 'keys the snapshot store holds (instrument definitions, book levels) for late joiners',
  'feeds.instruments.count': 'how many instruments the synthetic source quotes',
  'feeds.instruments.firstId': 'the first instrument id',
  'feeds.instruments.map': 'instrument id ranges → channel; instruments in no range are spread round-robin over the channels',
  'feeds.instruments.map[].from': 'first instrument id of the range',
  'feeds.instruments.map[].to': 'last instrument id of the range (inclusive)',
  'feeds.instruments.map[].channel': 'their channel',
  'feeds.synthetic.enabled': 'run the synthetic source',
  'feeds.synthetic.ratePerSec': 'mean messages per second (Poisson arrivals)',
  'feeds.synthetic.burstProbability': 'the chance an arrival is a burst',
  'feeds.synthetic.burstMax': 'the most messages in a burst',
  'feeds.synthetic.bookDepth': 'levels per side of the random-walk books (integer prices)',
  'feeds.synthetic.seed': 'a fixed seed for a repeatable stream; unset, a random one',
  'feeds.source': '`synthetic`, or `replay`: publish a tick file made by `qpgate record`',
  'feeds.replay.dir':
    'the only directory replay files are read from (under `state.dir` unless absolute), for the config\'s feed and `POST /v1/feeds` alike (a request names a file, never a directory): a path or symbolic link out of it, a symbolic link, a FIFO or anything but a regular file is refused (400 / a start error naming it); the file is opened `O_NOFOLLOW|O_NONBLOCK` and read asynchronously, off the event loop. `qpgate replay FILE` makes FILE\'s own directory the replay directory',
  'feeds.replay.file': 'the tick file (`qpgate record --out FILE`) in that directory; required with `feeds.source: replay`',
  'feeds.replay.speed': '1 = as recorded, 2 = twice as fast, 0 = as fast as possible',
  'feeds.replay.loop': 'start again at the end of the file',
  'feeds.sendSlots': 'registered send buffers: frames posted and not yet completed',
  'feeds.hopLimit': 'multicast TTL of the frames',
  'feeds.feedMemoryBudgetBytes':
    'what one feed may reserve: its channels plus its send slots (`sendSlots` × the largest `frameSize` rounded up to 64 B). A channel or a feed over it is refused at load (`feeds.channels[1]: ring 1.0 GiB + snapshots 4.5 MiB exceeds the per-feed budget of 512.0 MiB (feeds.feedMemoryBudgetBytes)`) and by `POST /v1/feeds` (400); at most `feeds.memoryBudgetBytes`',
  'feeds.memoryBudgetBytes':
    "what all the gateway's feeds may reserve together (the config's and those made by `POST /v1/feeds`, which answers 409 with what is left); a feed the host cannot give the memory to (MemAvailable, the cgroup's `memory.max`, or an allocation failing) is refused too (409, `ENOMEM`), nothing left allocated. Per feed and channel in `/v1/feeds` (`reservedBytes`) and `qpgate_feed_reserved_bytes`",
  'orders.enabled': 'serve order entry (trading and risk sessions over RC)',
  'orders.journal.file': 'the journal, under `state.dir` unless absolute (mode 0600, an older file tightened at open; the directory fsync\'ed when the file is created)',
  'orders.journal.fsync':
    "`none` = written (write(2)) before every answer, survives SIGKILL, not a power loss; `interval` = group commit, answers released after fdatasync (`intervalUs`, `groupMaxRecords`); `every` = a sync after each record. The fdatasync runs on the journal's own thread, never the engine's; measured cost: one order at a time ≈ 3.5–4 ms per answer (one disk sync), 8 sessions × 64 in flight p50 1.1–1.6 ms (docs/protocol.md §3.2)",
  'orders.instruments': 'the instruments order entry trades, each with a price-time book on the engine thread',
  'orders.instruments[].id': 'the instrument id (ids of their own: the default 1001..1008 never mix with the synthetic source\'s 1..100)',
  'orders.instruments[].symbol': 'a name for people',
  'orders.instruments[].tickSize': 'price mantissas are multiples of it',
  'orders.instruments[].minPrice': 'lowest price the book holds (a tick multiple)',
  'orders.instruments[].maxPrice': 'highest price the book holds (a tick multiple; at most 1,000,000 ticks above `minPrice`)',
  'orders.instruments[].maxQuantity': 'largest quantity of one order',
  'orders.instruments[].selfMatch': 'what an order that would trade with its own account cancels; unset, `cancel-newest`',
  'orders.instruments[].collar.mode': 'price collar around the reference price: `none`, `ticks` or `bps` (basis points)',
  'orders.instruments[].collar.width': 'the collar, in ticks or basis points of the reference price',
  'orders.instruments[].collar.referencePrice': 'the reference until the first trade (then the last trade price); 0 = no collar until a trade',
  'orders.instruments[].bookDepth': 'levels per side published on the feed',
  'orders.instruments[].channel': "the feed channel of its trades and book levels; unset, the feed's instrument map decides",
  'orders.accounts': 'the accounts order entry knows',
  'orders.accounts[].account': 'the account number (u64: a number, or a decimal string beyond 2^53; not 0)',
  'orders.accounts[].creditLimit':
    "the initial value of the account's remote-owned credit word: max open notional (price mantissa × lots); once a risk session has changed it, the journaled value wins over this at restart",
  'orders.sessions.throttle.ordersPerSecond': 'per session, checked before anything else; 0 = unlimited',
  'orders.sessions.throttle.burst': 'the token bucket: orders a session may send at once',
  'orders.sessions.backPressureMessages':
    'answers waiting for the journal or a send slot above which receives are not re-posted (clients see RNR NAKs; docs/protocol.md §3.3)',
  'orders.handlers':
    'TS order handlers beside the built-in book (see [Order handlers](#order-handlers-plug-ins)): each sees every order event after its answer',
  'orders.handlers[].module':
    '`drop-copy` (every order event as a JSON line in `options.file`, default `drop-copy.jsonl` under `state.dir`) or the path of an ES module exporting `createOrderHandler(context)`',
  'orders.handlers[].options': 'handed to the handler as `context.options`',
};
