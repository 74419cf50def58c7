package io.meshplane.app;

/**
 * Every operator setting: its key in config/meshplane.yaml, its environment override and its default.
 * This table is the single source for loading, validation and docs/OPERATIONS.md.
 */
public enum Setting {
  HTTP_HOST("http.host", "MESH_HTTP_HOST", "0.0.0.0", "interface both HTTP components bind"),
  HTTP_PORT("http.port", "MESH_HTTP_PORT", "8080", "coordinator API port; 0 binds a free port (logged)"),
  HTTP_INSTANCES("http.instances", "MESH_HTTP_INSTANCES", "0", "coordinator verticle instances; 0 = one per CPU core"),
  HTTP_TRUSTED_PROXIES("http.trusted_proxies", "MESH_HTTP_TRUSTED_PROXIES", "", "proxies whose X-Forwarded-For names the client (comma-separated IPs or CIDR blocks); empty = none, the TCP peer is the client"),
  PANEL_PORT("panel.port", "MESH_PANEL_PORT", "8081", "web panel port; 0 binds a free port (logged)"),
  PANEL_COOKIE_SECURE("panel.cookie_secure", "MESH_PANEL_COOKIE_SECURE", "true", "Secure flag on the session cookie; false only for local http"),
  PANEL_SESSION_IDLE("panel.session_idle", "MESH_PANEL_SESSION_IDLE", "30m", "a panel session unused for this long ends"),
  PANEL_SESSION_LIFETIME("panel.session_lifetime", "MESH_PANEL_SESSION_LIFETIME", "12h", "a panel session ends this long after login, used or not"),
  PANEL_LOGIN_FAILURES("panel.login_failures", "MESH_PANEL_LOGIN_FAILURES", "5", "failed logins per username and source address within panel.login_window before 429"),
  PANEL_LOGIN_WINDOW("panel.login_window", "MESH_PANEL_LOGIN_WINDOW", "15m", "the window of panel.login_failures (the window starts at the first failure; when it ends, every try is back)"),
  PANEL_LOGIN_PER_ADDRESS("panel.login_per_address", "MESH_PANEL_LOGIN_PER_ADDRESS", "30", "login attempts per source address per minute, any username (bounds password-hashing work)"),
  PANEL_API_RATE("panel.api_rate", "MESH_PANEL_API_RATE", "20", "panel API requests per second per session"),
  PANEL_API_BURST("panel.api_burst", "MESH_PANEL_API_BURST", "40", "panel API burst per session"),
  PANEL_OIDC_ISSUER("panel.oidc.issuer", "MESH_PANEL_OIDC_ISSUER", "", "single sign-on: the OpenID Connect issuer URL (https://idp.example/realms/x); empty = off"),
  PANEL_OIDC_CLIENT_ID("panel.oidc.client_id", "MESH_PANEL_OIDC_CLIENT_ID", "", "single sign-on: the panel's client id at the IdP"),
  PANEL_OIDC_CLIENT_SECRET("panel.oidc.client_secret", "MESH_PANEL_OIDC_CLIENT_SECRET", "", "single sign-on: the client secret (a secret: set it through the environment, never in the file; never logged)"),
  PANEL_OIDC_CLIENT_SECRET_FILE("panel.oidc.client_secret_file", "MESH_PANEL_OIDC_CLIENT_SECRET_FILE", "", "single sign-on: a file holding the client secret (a mounted Kubernetes secret), instead of client_secret"),
  PANEL_OIDC_REDIRECT_URI("panel.oidc.redirect_uri", "MESH_PANEL_OIDC_REDIRECT_URI", "", "single sign-on: the callback URL registered at the IdP, https://<panel>/api/v1/session/oidc/callback"),
  PANEL_OIDC_SCOPES("panel.oidc.scopes", "MESH_PANEL_OIDC_SCOPES", "openid,profile,email", "single sign-on: scopes asked of the IdP (openid is always asked)"),
  PANEL_OIDC_MAPPINGS("panel.oidc.mappings", "MESH_PANEL_OIDC_MAPPINGS", "[]", "single sign-on: a list of {claim, value, role, team, environment}, first match wins (the env value as JSON)"),
  PANEL_OIDC_BUTTON_LABEL("panel.oidc.button_label", "MESH_PANEL_OIDC_BUTTON_LABEL", "single sign-on", "single sign-on: the login page shows 'Sign in with <label>'"),
  PANEL_OIDC_TIMEOUT("panel.oidc.timeout", "MESH_PANEL_OIDC_TIMEOUT", "10s", "single sign-on: every HTTP call to the IdP (discovery, keys, code exchange) ends within this time"),
  PANEL_OIDC_MAX_PENDING("panel.oidc.max_pending", "MESH_PANEL_OIDC_MAX_PENDING", "10000", "single sign-on: the cluster's bound on logins started and not finished (beyond it a start is refused)"),
  PANEL_SERIES_INTERVAL("panel.series_interval", "MESH_PANEL_SERIES_INTERVAL", "10s", "how often each replica samples the overview's charts: the last-hour view has 360 points this far apart, the 24-hour view 288 points 30 times this far apart (10s: 1 h and 24 h)"),
  POSTGRES_URL("postgres.url", "MESH_PG_URL", "embedded", "'embedded' (a PostgreSQL started by the process) or postgresql://user:pass@host:port/db"),
  POSTGRES_POOL_SIZE("postgres.pool_size", "MESH_PG_POOL_SIZE", "16", "reactive connection pool size per replica"),
  POSTGRES_READ_POOL_SIZE("postgres.read_pool_size", "MESH_PG_READ_POOL_SIZE", "4", "connections per replica for lists and counts whose cost grows with the data (never the main pool's)"),
  POSTGRES_READ_TIMEOUT("postgres.read_timeout", "MESH_PG_READ_TIMEOUT", "5s", "a list or count statement running longer is cancelled by PostgreSQL: 503 query_timeout"),
  POSTGRES_EMBEDDED_DIR("postgres.embedded_dir", "MESH_PG_EMBEDDED_DIR", "data/postgres", "data folder of the embedded PostgreSQL (kept across restarts)"),
  CLUSTER_NAME("cluster.name", "MESH_CLUSTER_NAME", "meshplane", "Hazelcast cluster name; replicas with the same name form one cluster"),
  CLUSTER_HOST("cluster.host", "MESH_CLUSTER_HOST", "", "interface the Hazelcast member and event bus bind; empty = chosen by Hazelcast"),
  CLUSTER_PORT("cluster.port", "MESH_CLUSTER_PORT", "5701", "Hazelcast member port"),
  CLUSTER_EVENTBUS_PORT("cluster.eventbus_port", "MESH_CLUSTER_EVENTBUS_PORT", "0", "Vert.x clustered event bus port (replica to replica: node-change events); 0 = a free port picked at start. Pin it where a firewall or NetworkPolicy sits between replicas"),
  CLUSTER_MEMBERS("cluster.members", "MESH_CLUSTER_MEMBERS", "127.0.0.1", "TCP-IP join list, comma-separated host[:port]"),
  CLUSTER_ADVERTISE_URL("cluster.advertise_url", "MESH_ADVERTISE_URL", "", "the base URL agents use to reach this replica directly, http(s)://host[:port][/path] (owner affinity: heartbeat answers name the replica that owns a node's live entry); empty = this replica is never named"),
  CLUSTER_K8S_SERVICE("cluster.kubernetes_service", "MESH_CLUSTER_K8S_SERVICE", "", "headless service DNS name; set = Kubernetes DNS discovery instead of the member list"),
  AUTH_KEYS_DIR("auth.keys_dir", "MESH_KEYS_DIR", "data/keys", "signing keys folder; generated on first start when empty"),
  AUTH_ISSUER("auth.issuer", "MESH_AUTH_ISSUER", "meshplane", "JWT iss (and aud) of the tokens this mesh issues"),
  TOKENS_MAX_LIFETIME("tokens.max_lifetime", "MESH_TOKENS_MAX_LIFETIME", "90d", "longest allowed token lifetime"),
  HEARTBEAT_INTERVAL("heartbeat.interval", "MESH_HEARTBEAT_INTERVAL", "30s", "interval_s told to agents"),
  HEARTBEAT_STALE_AFTER("heartbeat.stale_after", "MESH_STALE_AFTER", "90s", "a node without a heartbeat for this long is stale"),
  NODES_ADDRESS_POOL("nodes.address_pool", "MESH_ADDRESS_POOL", "100.64.0.0/10", "IPv4 CIDR mesh addresses are allocated from"),
  NODES_PENDING_TTL("nodes.pending_ttl", "MESH_NODES_PENDING_TTL", "24h", "an enrollment without a heartbeat for this long is reported (event node.enroll_unconfirmed)"),
  METRICS_GAUGE_INTERVAL("metrics.gauge_interval", "MESH_METRICS_GAUGE_INTERVAL", "15s", "how often the oldest replica samples the mesh-wide gauges of ingress nodes, traffic policies and MeshCA certificates (one bulk read of the live state each time)"),
  OPERATIONS_DEADLINE("operations.deadline", "MESH_OPERATIONS_DEADLINE", "10m", "an operation not completed within this time expires"),
  POLICY_WORKERS("policy.workers", "MESH_POLICY_WORKERS", "1", "threads that evaluate policy tests, previews and compile estimates (never an event loop)"),
  POLICY_MAX_EVALUATIONS("policy.max_evaluations", "MESH_POLICY_MAX_EVALUATIONS", "4", "policy evaluations running or queued per replica; more are refused with 503 and Retry-After"),
  POLICY_MAX_PER_CALLER("policy.max_per_caller", "MESH_POLICY_MAX_PER_CALLER", "2", "policy evaluations of one token or panel user at a time; more are refused with 429 and Retry-After"),
  POLICY_MAX_PER_TEAM("policy.max_per_team", "MESH_POLICY_MAX_PER_TEAM", "2", "policy evaluations about one team and environment at a time, whoever asks; more are refused with 429 and Retry-After"),
  POLICY_DEADLINE("policy.deadline", "MESH_POLICY_DEADLINE", "10s", "a policy evaluation (time queued included) that runs longer stops with 503 and Retry-After"),
  MESHCA_SECRET("meshca.secret", "MESH_MESHCA_SECRET", "", "MeshCA: the secret (at least 32 bytes, the same on every replica) that seals the CA's private keys in PostgreSQL (a secret: set it through the environment, never in the file; never logged); empty with meshca.secret_file empty = generated at the first start in meshca.secret beside auth.keys_dir (single replica)"),
  MESHCA_SECRET_FILE("meshca.secret_file", "MESH_MESHCA_SECRET_FILE", "", "MeshCA: a file holding the secret (a mounted Kubernetes secret), instead of meshca.secret"),
  MESHCA_TRUST_DOMAIN("meshca.trust_domain", "MESH_MESHCA_TRUST_DOMAIN", "mesh.local", "MeshCA: the SPIFFE trust domain of node certificates (spiffe://<trust domain>/team/<t>/env/<e>/node/<id>)"),
  MESHCA_NODE_LIFETIME("meshca.node_lifetime", "MESH_MESHCA_NODE_LIFETIME", "24h", "MeshCA: how long a node certificate is valid; nodes renew at a random point of 30-40 % of it"),
  MESHCA_RENEWAL_GRACE("meshca.renewal_grace", "MESH_MESHCA_RENEWAL_GRACE", "7d", "MeshCA: how long after its certificate expired a node may still renew with its agent token alone"),
  MESHCA_MAX_SIGNATURES_PER_S("meshca.max_signatures_per_s", "MESH_MESHCA_MAX_SIGNATURES_PER_S", "50", "MeshCA: node certificates signed per second by the whole cluster (shared by every replica); CSRs beyond it are deferred"),
  MESHCA_CRL_URL("meshca.crl_url", "MESH_MESHCA_CRL_URL", "", "MeshCA: the CRL distribution point written into node certificates; empty = <cluster.advertise_url>/v1/meshca/crl, or http://localhost:<http.port>/v1/meshca/crl without one"),
  MESHCA_INTERMEDIATE_LIFETIME("meshca.intermediate_lifetime", "MESH_MESHCA_INTERMEDIATE_LIFETIME", "90d", "MeshCA: the lifetime of the intermediate that signs node certificates (made at the first start)"),
  MESHCA_AUTO_ROTATE("meshca.auto_rotate", "MESH_MESHCA_AUTO_ROTATE", "true", "MeshCA: rotate the intermediate automatically from two thirds of its lifetime (its phases advance as the fleet follows); needs the root's key in the coordinator"),
  MESHCA_SHORT_LIFETIMES("meshca.short_lifetimes", "MESH_MESHCA_SHORT_LIFETIMES", "false", "MeshCA: for drills and tests only: allows lifetimes of minutes (node certificates from 1m, intermediates from 2m, roots from 3m)"),
  MESHCA_ROOT_LIFETIME("meshca.root_lifetime", "MESH_MESHCA_ROOT_LIFETIME", "3650d", "MeshCA: the lifetime of the root (made at the first start)"),
  RELAYS("relays", "MESH_RELAYS", "[]", "relays nodes are assigned to: a list of {name, region, url} (the env value as JSON)"),
  WATCH_ADMIT_PER_SECOND("watch.admit_per_second", "MESH_WATCH_ADMIT_PER_SECOND", "500", "new watch streams this replica accepts per second; beyond it 503 with Retry-After (a dead replica's agents come back as a trickle)"),
  WATCH_MAX_BUFFER("watch.max_buffer", "MESH_WATCH_MAX_BUFFER", "262144", "bytes a watch stream may hold unread before it is closed as a slow reader"),
  WATCH_PING("watch.ping", "MESH_WATCH_PING", "15s", "a watch stream that carried nothing for this long gets a ping line"),
  WATCH_DRAIN("watch.drain", "MESH_WATCH_DRAIN", "10s", "on shutdown, the window over which the replica ends its watch streams, a few at a time"),
  WRITEBEHIND_MAX_BACKLOG("writebehind.max_backlog", "MESH_WRITEBEHIND_MAX_BACKLOG", "1000000", "dirty live entries above which /readyz reports the write-behind DOWN"),
  WRITEBEHIND_FLUSH_INTERVAL("writebehind.flush_interval", "MESH_FLUSH_INTERVAL", "1s", "write-behind flush period: at most one row write per node per interval"),
  SHUTDOWN_GRACE("shutdown.grace", "MESH_SHUTDOWN_GRACE", "5s", "on SIGTERM, how long in-flight requests may take to finish");

  public final String key;
  public final String env;
  public final String defaultValue;
  public final String meaning;

  Setting(String key, String env, String defaultValue, String meaning) {
    this.key = key;
    this.env = env;
    this.defaultValue = defaultValue;
    this.meaning = meaning;
  }

  public static Setting byKey(String key) {
    for (Setting s : values()) {
      if (s.key.equals(key)) return s;
    }
    return null;
  }
}
