package io.meshplane.load;

import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.details;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.jmesPath;
import static io.gatling.javaapi.core.CoreDsl.rampUsersPerSec;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An enrollment ramp: {@code POST /v1/nodes} arriving at a rate that grows from enroll.from to
 * enroll.to per second over enroll.duration (the open model), with an enrollment token, each a new
 * node with a unique name (er-&lt;run id&gt;-&lt;n&gt;), a fresh public key and the team and
 * environment given in the body.
 *
 * <pre>
 * mvn -B gatling:test -Dgatling.simulationClass=io.meshplane.load.EnrollmentRamp -Durls=... -Dtoken=$ADMIN
 * </pre>
 *
 * The enrollment token: -Denroll.token=... (or MESHPLANE_ENROLL_TOKEN); when none is given, the run
 * creates one with the admin token ({@code POST /v1/auth/tokens}, surface enrollment, scoped to the team
 * and environment, 1 hour) before the ramp and revokes it after. The nodes stay enrolled (they are
 * {@code pending}: they never send a heartbeat).
 *
 * <p>Parameters: enroll.from (1/s), enroll.to (20/s), enroll.duration (60 s), team (load),
 * enroll.environment (gatling-ramp: not the storm's environment), enroll.p99 (500 ms), urls, token.
 * Fails the run on any failed request (anything but a 201 with a node id and a credential) and when the
 * p99 of "enroll" is not below enroll.p99.
 */
public class EnrollmentRamp extends Simulation {
  static final String REQUEST = "enroll";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<String> urls = Params.urls();
  private final String team = Params.team();
  private final String environment = Params.slug("enroll.environment", "gatling-ramp");
  private final double from = Params.number("enroll.from", 1, 0.1, 10_000);
  private final double to = Params.number("enroll.to", 20, 0.1, 10_000);
  private final Duration duration = Params.duration("enroll.duration", Duration.ofSeconds(60));
  private final String runId = Long.toString(System.currentTimeMillis() / 1000, 36);
  private final AtomicLong sequence = new AtomicLong();
  private final SecureRandom random = new SecureRandom();
  /** The enrollment token and, when this run created it, its id (revoked in after()). */
  private volatile String enrollToken = System.getProperty("enroll.token", System.getenv("MESHPLANE_ENROLL_TOKEN"));
  private volatile String createdTokenId;

  {
    ScenarioBuilder enroll = scenario("enrollment ramp")
        .exec(http(REQUEST)
            .post("/v1/nodes")
            .header("Authorization", session -> "Bearer " + enrollToken)
            .header("Content-Type", "application/json")
            .body(StringBody(session -> body()))
            .check(status().is(201), jmesPath("node.id").exists(), jmesPath("credential.token").exists()));
    System.out.printf("EnrollmentRamp: %.1f/s to %.1f/s over %s into %s/%s through %s%n", from, to, duration, team,
        environment, urls);
    setUp(enroll.injectOpen(rampUsersPerSec(from).to(to).during(duration)).protocols(Storm.protocol(urls, true)))
        .maxDuration(duration.plusSeconds(60))
        .assertions(
            global().failedRequests().count().is(0L),
            details(REQUEST).responseTime().percentile(99.0).lt(Params.millis("enroll.p99", 500)));
  }

  private String body() {
    byte[] key = new byte[32];
    random.nextBytes(key);
    return "{\"name\":" + Fleet.quote("er-" + runId + "-" + sequence.incrementAndGet())
        + ",\"public_key\":" + Fleet.quote(Base64.getEncoder().encodeToString(key))
        + ",\"team\":" + Fleet.quote(team)
        + ",\"environment\":" + Fleet.quote(environment)
        + ",\"tags\":[\"tag:ramp\"]}";
  }

  @Override
  public void before() {
    if (enrollToken != null && !enrollToken.isBlank()) return;
    String admin = Params.token();
    String expires = Instant.now().plus(1, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS).toString();
    String body = "{\"name\":\"gatling-enrollment-ramp-" + runId + "\",\"scope\":{\"team\":" + Fleet.quote(team)
        + ",\"environment\":" + Fleet.quote(environment) + ",\"surface\":\"enrollment\"},\"expires\":\"" + expires + "\"}";
    HttpResponse<String> r = send("POST", "/v1/auth/tokens", admin, body);
    if (r.statusCode() != 201) {
      throw new IllegalStateException("creating the enrollment token: HTTP " + r.statusCode() + " "
          + PrepareAgents.abbreviate(r.body()) + " (give an admin token with -Dtoken, or -Denroll.token)");
    }
    try {
      JsonNode t = JSON.readTree(r.body());
      enrollToken = t.path("token").asText();
      createdTokenId = t.path("id").asText();
    } catch (Exception e) {
      throw new IllegalStateException("creating the enrollment token: " + e);
    }
    System.out.println("EnrollmentRamp: created the enrollment token " + createdTokenId + " (" + team + "/" + environment + ")");
  }

  @Override
  public void after() {
    System.out.println("EnrollmentRamp: " + sequence.get() + " enrollments sent");
    if (createdTokenId == null) return;
    HttpResponse<String> r = send("DELETE", "/v1/auth/tokens/" + createdTokenId, Params.token(), null);
    System.out.println("EnrollmentRamp: revoked the enrollment token " + createdTokenId + ": HTTP " + r.statusCode());
  }

  private HttpResponse<String> send(String method, String path, String token, String body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(urls.get(0) + path)).timeout(Duration.ofSeconds(30))
        .header("Authorization", "Bearer " + token).header("Accept", "application/json");
    if (body != null) {
      b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
    } else {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    }
    try {
      return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build()
          .send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (Exception e) {
      throw new IllegalStateException(method + " " + path + ": " + e, e);
    }
  }
}
