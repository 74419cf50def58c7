package io.meshplane.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The feeder the simulations read: enrolls N virtual agents through {@code POST /v1/nodes} (with an
 * admin, operator or enrollment token) and writes {@code target/agents.csv}: per agent its node id,
 * its own agent credential, its name, its public key, the relay it was assigned, its tag, its
 * endpoint and the peers and ACL versions it holds.
 *
 * <p>Then a warm-up (unless {@code -Dwarmup=false}): one heartbeat per agent on every coordinator URL,
 * so each replica has checked each agent token's signature once (the first request with a token pays
 * an ES256 check, about 2 ms of CPU; the storm measures the steady state), followed by settling passes
 * until a whole pass is answered {@code unchanged} (an agent's versions move after its own first
 * heartbeat is flushed), so the file's versions are current and the storm's heartbeats are answered
 * {@code unchanged} from the start.
 *
 * <pre>
 * mvn -B -q test-compile exec:java -Durls=http://127.0.0.1:8080 -Dtoken=$ADMIN -Dagents=1000
 * </pre>
 *
 * Parameters (system properties): urls, token (or MESHPLANE_TOKEN), agents (1000), groups (50: agent i
 * carries tag:g(i % groups)), team (load), environment (gatling), region (none), prefix (ag + a run id),
 * concurrency (8), warmup (true), settle.passes (6), agents.file (target/agents.csv), reuse (false: true
 * enrolls nobody and only warms up and settles the agents already in the file, e.g. on a replica added
 * or restarted since, whose token cache is cold; no token is needed then).
 */
public final class PrepareAgents {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private PrepareAgents() {}

  public static void main(String[] args) throws Exception {
    List<String> urls = Params.urls();
    boolean reuse = Params.bool("reuse", false);
    String token = reuse ? null : Params.token();
    int count = Params.integer("agents", 1000, 1, 200_000);
    int groups = Params.integer("groups", 50, 1, 10_000);
    String team = Params.team();
    String environment = Params.environment();
    String region = Params.string("region", "");
    String prefix = Params.string("prefix", "ag" + Long.toString(System.currentTimeMillis() / 1000, 36));
    if (!(prefix + "-" + count).matches("^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$")) {
      throw new IllegalArgumentException("prefix: '" + prefix + "' must start a DNS label (a-z, 0-9, '-')");
    }
    int concurrency = Params.integer("concurrency", 8, 1, 64);
    boolean warmup = Params.bool("warmup", true);
    int settlePasses = Params.integer("settle.passes", 6, 0, 50);
    Path out = Params.agentsFile();

    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    ExecutorService pool = Executors.newFixedThreadPool(concurrency);
    try {
      List<Fleet.Agent> agents;
      if (reuse) {
        agents = Fleet.load(out).agents;
        System.out.println("reusing the " + agents.size() + " agents of " + out.toAbsolutePath() + " (no enrollment)");
      } else {
        long t0 = System.nanoTime();
        agents = enroll(client, pool, urls, token, count, groups, team, environment, region, prefix);
        double enrollS = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "enrolled %d agents in %s/%s in %.1f s (%.0f/s) through %s%n", agents.size(), team,
            environment, enrollS, agents.size() / enrollS, String.join(", ", urls));
      }
      if (warmup) warmUp(client, pool, urls, agents, settlePasses);
      Fleet.write(out, agents);
      System.out.println("wrote " + out.toAbsolutePath() + " (" + agents.size() + " agents, mode 0600; it holds "
          + "agent credentials: never commit it)");
    } finally {
      pool.shutdownNow();
      pool.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static List<Fleet.Agent> enroll(HttpClient client, ExecutorService pool, List<String> urls, String token,
      int count, int groups, String team, String environment, String region, String prefix) throws Exception {
    SecureRandom random = new SecureRandom();
    AtomicInteger failures = new AtomicInteger();
    List<Future<Fleet.Agent>> futures = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      final int index = i;
      futures.add(pool.submit(() -> {
        byte[] key = new byte[32];
        random.nextBytes(key);
        String publicKey = Base64.getEncoder().encodeToString(key);
        String name = prefix + "-" + index;
        String tag = "tag:g" + (index % groups);
        StringBuilder body = new StringBuilder(200).append('{')
            .append("\"name\":").append(Fleet.quote(name))
            .append(",\"public_key\":").append(Fleet.quote(publicKey))
            .append(",\"team\":").append(Fleet.quote(team))
            .append(",\"environment\":").append(Fleet.quote(environment))
            .append(",\"tags\":[").append(Fleet.quote(tag)).append(']');
        if (!region.isEmpty()) body.append(",\"region\":").append(Fleet.quote(region));
        body.append('}');
        String url = urls.get(index % urls.size());
        HttpResponse<String> r = post(client, url + "/v1/nodes", token, body.toString());
        if (r.statusCode() != 201) {
          if (failures.incrementAndGet() <= 5) {
            System.err.println("enroll " + name + ": HTTP " + r.statusCode() + " " + abbreviate(r.body()));
          }
          return null;
        }
        JsonNode a = JSON.readTree(r.body());
        String id = a.path("node").path("id").asText("");
        String credential = a.path("credential").path("token").asText("");
        if (id.isEmpty() || credential.isEmpty()) {
          failures.incrementAndGet();
          System.err.println("enroll " + name + ": the answer lacks node.id or credential.token");
          return null;
        }
        return new Fleet.Agent(id, credential, name, publicKey, a.path("node").path("relay").asText(""), tag,
            Fleet.endpoint(index), 0, 0);
      }));
    }
    List<Fleet.Agent> agents = new ArrayList<>(count);
    for (Future<Fleet.Agent> f : futures) {
      Fleet.Agent a = f.get();
      if (a != null) agents.add(a);
    }
    if (failures.get() > 0) {
      throw new IllegalStateException(failures.get() + " of " + count + " enrollments failed (first ones above)");
    }
    return agents;
  }

  /** One heartbeat per agent on every URL, then passes until a whole pass is answered unchanged. */
  private static void warmUp(HttpClient client, ExecutorService pool, List<String> urls, List<Fleet.Agent> agents,
      int settlePasses) throws Exception {
    Fleet.Counters counters = new Fleet.Counters();
    for (int u = 0; u < urls.size(); u++) {
      double s = pass(client, pool, urls, u, agents, counters);
      System.out.printf(Locale.ROOT, "warm-up on %s: %d heartbeats in %.1f s (each agent token checked once there)%n",
          urls.get(u), agents.size(), s);
    }
    for (int p = 1; p <= settlePasses; p++) {
      Thread.sleep(1500); // the write-behind's flush (1 s) and the change feed (250 ms)
      long answers = counters.answers.sum();
      long peers = counters.peersUnchanged.sum();
      long acl = counters.aclUnchanged.sum();
      pass(client, pool, urls, p, agents, counters);
      boolean settled = counters.allUnchangedSince(answers, peers, acl);
      System.out.printf(Locale.ROOT, "settling pass %d: %d of %d peers answers and %d of %d acl answers unchanged%n", p,
          counters.peersUnchanged.sum() - peers, agents.size(), counters.aclUnchanged.sum() - acl, agents.size());
      if (settled) return;
    }
    if (settlePasses > 0) {
      System.out.println("not settled after " + settlePasses + " passes: the storm starts with some delta answers");
    }
  }

  private static double pass(HttpClient client, ExecutorService pool, List<String> urls, int offset,
      List<Fleet.Agent> agents, Fleet.Counters counters) throws Exception {
    long t0 = System.nanoTime();
    long started = System.currentTimeMillis();
    AtomicInteger failures = new AtomicInteger();
    List<Future<?>> futures = new ArrayList<>(agents.size());
    for (int i = 0; i < agents.size(); i++) {
      Fleet.Agent a = agents.get(i);
      String url = urls.get((i + offset) % urls.size());
      futures.add(pool.submit(() -> {
        String body = a.body(Math.max(0, (System.currentTimeMillis() - started) / 1000));
        HttpResponse<String> r = post(client, url + "/v1/nodes/" + a.id + "/heartbeat", a.token, body);
        String outcome = r.statusCode() == 200 ? a.apply(r.body(), counters) : "HTTP " + r.statusCode() + " " + abbreviate(r.body());
        if (!outcome.equals("ok") && failures.incrementAndGet() <= 5) {
          System.err.println("heartbeat " + a.name + ": " + outcome);
        }
        return null;
      }));
    }
    for (Future<?> f : futures) f.get();
    if (failures.get() > 0) throw new IllegalStateException(failures.get() + " warm-up heartbeats failed (first ones above)");
    return (System.nanoTime() - t0) / 1e9;
  }

  private static HttpResponse<String> post(HttpClient client, String url, String token, String body)
      throws IOException, InterruptedException {
    HttpRequest request = HttpRequest.newBuilder(URI.create(url)).timeout(TIMEOUT)
        .header("Authorization", "Bearer " + token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  static String abbreviate(String s) {
    return s == null ? "" : s.length() > 300 ? s.substring(0, 300) + "…" : s;
  }
}
