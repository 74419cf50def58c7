package io.meshplane.load;

import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.bodyString;
import static io.gatling.javaapi.core.CoreDsl.constantUsersPerSec;
import static io.gatling.javaapi.core.CoreDsl.details;
import static io.gatling.javaapi.core.CoreDsl.exec;
import static io.gatling.javaapi.core.CoreDsl.feed;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.jmesPath;
import static io.gatling.javaapi.core.CoreDsl.listFeeder;
import static io.gatling.javaapi.core.CoreDsl.nothingFor;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.header;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatling.javaapi.core.Assertion;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpRequestActionBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * The heartbeat storm of {@link HeartbeatStorm} and, at the same time, operators at a low rate (one
 * setUp, three populations: the storm, inventory readers, policy editors):
 *
 * <ul>
 *   <li><b>inventory</b> (ops.rate walks/s): {@code GET /v1/nodes?limit=100}, then the next pages with
 *       {@code next_cursor} until it is null or ops.pages pages were read, then ops.reads
 *       {@code GET /v1/nodes/{id}} of agents drawn at random;</li>
 *   <li><b>policy edits</b> (acl.rate edits/s): {@code GET /v1/acl} of the agents' team and environment
 *       (the version in its ETag), a think time (acl.think.min to acl.think.max), then
 *       {@code PUT /v1/acl} with {@code If-Match} of the version read: the grants read, with the
 *       operator's edit (the last grant replaced by {@code tag:gA -> tag:gB tcp/P}, A, B and P drawn at
 *       random; the first grant, {@code tag:g0 -> tag:g1 tcp/5432}, kept). Editors arrive at random
 *       (Poisson), so two edits sometimes race: one is stored, the other gets 409 {@code conflict}, the
 *       documented outcome (docs/API.md §10). That is not an error: the operator reads the policy again
 *       and retries, up to acl.retries times; only the last retry must be a 200.</li>
 * </ul>
 *
 * Each edit changes the rules (and, when the pair is new, the peers) of a few dozen agents, whose next
 * heartbeats are answered with the change, then {@code unchanged} again: the storm sees policy edits
 * reach the agents.
 *
 * <pre>
 * mvn -B gatling:test -Dgatling.simulationClass=io.meshplane.load.OperatorsDuringStorm -Durls=... -Dtoken=$ADMIN
 * </pre>
 *
 * Parameters: those of {@link Storm} (hb.*), token (an admin or operator token covering the agents' team
 * and environment), team, environment, ops.rate (0.5), ops.pages (20), ops.reads (5), acl.rate (0.5),
 * acl.think.min (500 ms), acl.think.max (1500 ms), acl.retries (5), and the p99 bounds ops.page.p99
 * (500 ms, first and next pages), ops.node.p99 (300 ms), acl.read.p99 (300 ms), acl.put.p99 (1000 ms),
 * hb.p99 (150 ms). Fails the run on any failed request (409s that are retried are not failures) and when
 * a p99 bound is not met.
 */
public class OperatorsDuringStorm extends Simulation {
  static final String FIRST_PAGE = "GET /v1/nodes?limit=100";
  static final String NEXT_PAGE = "GET /v1/nodes?limit=100&cursor=";
  static final String NODE = "GET /v1/nodes/{id}";
  static final String ACL_READ = "GET /v1/acl";
  static final String ACL_PUT = "PUT /v1/acl";
  static final String ACL_REREAD = "GET /v1/acl (re-read after 409)";
  static final String ACL_RETRY = "PUT /v1/acl (retry after 409)";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Fleet fleet = Fleet.load(Params.agentsFile());
  private final String token = Params.token();
  private final String team = Params.team();
  private final String environment = Params.environment();
  private final int groups = Math.max(1, fleet.groups());
  private final int retries = Params.integer("acl.retries", 5, 0, 100);
  private final LongAdder stored = new LongAdder();
  private final LongAdder conflicts = new LongAdder();
  private final LongAdder pages = new LongAdder();

  {
    List<String> urls = Params.urls();
    int maxPages = Params.integer("ops.pages", 20, 1, 10_000);
    int reads = Params.integer("ops.reads", 5, 0, 1000);
    double opsRate = Params.number("ops.rate", 0.5, 0.01, 1000);
    double aclRate = Params.number("acl.rate", 0.5, 0.01, 1000);
    Duration thinkMin = Params.duration("acl.think.min", Duration.ofMillis(500));
    Duration thinkMax = Params.duration("acl.think.max", Duration.ofMillis(1500));
    Duration ramp = Params.duration("hb.ramp", Duration.ofSeconds(10));
    Duration duration = Params.duration("hb.duration", Duration.ofSeconds(45));

    ScenarioBuilder inventory = scenario("operators: inventory")
        .exec(http(FIRST_PAGE).get("/v1/nodes").queryParam("limit", "100")
            .header("Authorization", "Bearer " + token)
            .check(status().is(200), bodyString().transform(OperatorsDuringStorm::nextCursor).saveAs("cursor")))
        .exec(session -> {
          pages.increment();
          return session;
        })
        .asLongAs(s -> !text(s, "cursor").isEmpty() && counter(s, "page") < maxPages - 1, "page").on(
            exec(http(NEXT_PAGE).get("/v1/nodes").queryParam("limit", "100").queryParam("cursor", "#{cursor}")
                .header("Authorization", "Bearer " + token)
                .check(status().is(200), bodyString().transform(OperatorsDuringStorm::nextCursor).saveAs("cursor")))
            .exec(session -> {
              pages.increment();
              return session;
            }))
        .repeat(reads).on(
            feed(listFeeder(fleet.records()).random())
            .exec(http(NODE).get("/v1/nodes/#{node_id}")
                .header("Authorization", "Bearer " + token)
                .check(status().is(200), jmesPath("id").isEL("#{node_id}"))));

    ScenarioBuilder edits = scenario("operators: policy edits")
        .exec(read(ACL_READ))
        .exitHereIfFailed() // a failed read is counted; do not send a PUT without its version
        .pause(thinkMin, thinkMax)
        .exec(put(ACL_PUT, retries > 0))
        .asLongAs(s -> counter(s, "acl_status") == 409 && counter(s, "retry") < retries, "retry").on(
            exec(session -> {
              conflicts.increment();
              return session;
            })
            .exec(read(ACL_REREAD))
            .exitHereIfFailed()
            .doIfOrElse(s -> counter(s, "retry") + 1 >= retries)
            .then(exec(put(ACL_RETRY, false)))
            .orElse(exec(put(ACL_RETRY, true))))
        .exec(session -> {
          if (counter(session, "acl_status") == 200) stored.increment();
          return session;
        });

    System.out.printf("OperatorsDuringStorm: %d agents, %.1f heartbeats/s; inventory walks %.2f/s, policy edits %.2f/s"
            + " on %s/%s; over %s%n", fleet.agents.size(), Storm.rate(), opsRate, aclRate, team, environment, urls);
    setUp(
        Storm.heartbeats(fleet).injectOpen(Storm.injection()).protocols(Storm.protocol()),
        inventory.injectOpen(nothingFor(ramp), constantUsersPerSec(opsRate).during(duration).randomized())
            .protocols(Storm.protocol(urls, false)),
        edits.injectOpen(nothingFor(ramp), constantUsersPerSec(aclRate).during(duration).randomized())
            .protocols(Storm.protocol(urls, false)))
        .maxDuration(Storm.maxDuration())
        .assertions(assertions(maxPages, reads));
  }

  /** Failed requests: none; p99 bounds per request name (only for requests every run makes). */
  private List<Assertion> assertions(int maxPages, int reads) {
    int pageP99 = Params.millis("ops.page.p99", 500);
    List<Assertion> out = new ArrayList<>();
    out.add(global().failedRequests().count().is(0L));
    out.add(details(Storm.REQUEST).responseTime().percentile(99.0).lt(Storm.p99()));
    out.add(details(FIRST_PAGE).responseTime().percentile(99.0).lt(pageP99));
    // a next page exists when the inventory holds more than one page (the agents alone: > 100)
    if (maxPages > 1 && fleet.agents.size() > 100) out.add(details(NEXT_PAGE).responseTime().percentile(99.0).lt(pageP99));
    if (reads > 0) out.add(details(NODE).responseTime().percentile(99.0).lt(Params.millis("ops.node.p99", 300)));
    out.add(details(ACL_READ).responseTime().percentile(99.0).lt(Params.millis("acl.read.p99", 300)));
    out.add(details(ACL_PUT).responseTime().percentile(99.0).lt(Params.millis("acl.put.p99", 1000)));
    return out;
  }

  private HttpRequestActionBuilder read(String name) {
    return http(name).get("/v1/acl").queryParam("team", team).queryParam("environment", environment)
        .header("Authorization", "Bearer " + token)
        .check(status().is(200), header("ETag").saveAs("etag"), bodyString().saveAs("acl_doc"));
  }

  /** @param conflictAllowed a 409 is an expected outcome (it is retried); false on the last try */
  private HttpRequestActionBuilder put(String name, boolean conflictAllowed) {
    return http(name).put("/v1/acl").queryParam("team", team).queryParam("environment", environment)
        .header("Authorization", "Bearer " + token)
        .header("Content-Type", "application/json")
        .header("If-Match", "#{etag}")
        .body(StringBody(this::edited))
        .check(conflictAllowed ? status().in(200, 409).saveAs("acl_status") : status().is(200).saveAs("acl_status"));
  }

  /** The policy read, with the operator's edit: grant 0 kept (or created), the last grant replaced. */
  private String edited(Session session) {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    try {
      JsonNode read = JSON.readTree(session.getString("acl_doc"));
      ObjectNode doc = JSON.createObjectNode();
      ArrayNode grants = doc.putArray("grants");
      JsonNode old = read.path("grants");
      if (old.isArray() && old.size() > 0) {
        grants.add(strip(old.get(0)));
      } else {
        grants.add(grant("tag:g0", groups > 1 ? "tag:g1" : "tag:g0", "tcp/5432"));
      }
      int a = groups > 3 ? 2 + r.nextInt(groups - 2) : 0;
      int b = groups > 3 ? 2 + r.nextInt(groups - 2) : groups - 1;
      grants.add(grant("tag:g" + a, "tag:g" + b, "tcp/" + (1024 + r.nextInt(64_000))));
      return JSON.writeValueAsString(doc);
    } catch (Exception e) {
      throw new IllegalStateException("the policy read is not JSON: " + e);
    }
  }

  private static ObjectNode strip(JsonNode grant) {
    ObjectNode g = JSON.createObjectNode();
    g.set("src", grant.path("src"));
    g.set("dst", grant.path("dst"));
    g.set("ports", grant.path("ports"));
    return g;
  }

  private static ObjectNode grant(String src, String dst, String port) {
    ObjectNode g = JSON.createObjectNode();
    g.putArray("src").add(src);
    g.putArray("dst").add(dst);
    g.putArray("ports").add(port);
    return g;
  }

  /** The page's next_cursor, "" when null (the last page). */
  static String nextCursor(String body) {
    try {
      JsonNode c = JSON.readTree(body).path("next_cursor");
      return c.isTextual() ? c.textValue() : "";
    } catch (Exception e) {
      throw new IllegalStateException("the page is not JSON: " + e);
    }
  }

  /** A whole number of the session; 0 when absent (a failed check saves nothing). */
  private static int counter(Session s, String name) {
    return s.contains(name) ? s.getInt(name) : 0;
  }

  /** A string of the session; "" when absent. */
  private static String text(Session s, String name) {
    return s.contains(name) ? s.getString(name) : "";
  }

  @Override
  public void after() {
    System.out.println("OperatorsDuringStorm: " + fleet.counters.summary());
    System.out.println("OperatorsDuringStorm: inventory pages read " + pages.sum() + "; policy edits stored "
        + stored.sum() + ", 409 conflicts retried " + conflicts.sum());
  }
}
