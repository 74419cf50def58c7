package io.meshplane.load;

import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.bodyString;
import static io.gatling.javaapi.core.CoreDsl.constantUsersPerSec;
import static io.gatling.javaapi.core.CoreDsl.listFeeder;
import static io.gatling.javaapi.core.CoreDsl.rampUsersPerSec;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import io.gatling.javaapi.core.FeederBuilder;
import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The heartbeat storm, shared by {@link HeartbeatStorm} and {@link OperatorsDuringStorm}: the open
 * injection model (heartbeats arrive at a rate, whatever the latency, as a fleet's agents do), each
 * arrival one virtual agent's heartbeat with its own credential and the versions it holds, spread
 * round-robin over the coordinator URLs.
 *
 * <p>Parameters: hb.rate (200 heartbeats/s), hb.ramp (10 s from 1/s up to the rate), hb.duration (45 s
 * at the rate), hb.feeder (circular: each agent in turn, every agents/rate seconds, like agents on a
 * fixed interval; random: agents drawn at random), hb.shareConnections (true: one keep-alive pool for
 * all virtual agents, what a replica behind a load balancer sees; false: every heartbeat opens its own
 * connection), hb.p99 (150: the p99 bound in ms of the request "heartbeat"; README.md says why).
 */
final class Storm {
  static final String REQUEST = "heartbeat";

  private Storm() {}

  /** The HTTP protocol: the coordinator URLs round-robin (one per virtual user), JSON, no cache. */
  static HttpProtocolBuilder protocol(List<String> urls, boolean shareConnections) {
    HttpProtocolBuilder p = http.baseUrls(urls)
        .acceptHeader("application/json")
        .userAgentHeader("meshplane-gatling")
        .disableCaching() // GET /v1/acl answers an ETag: never turn an operator's read into a conditional one
        .warmUp(urls.get(0) + "/healthz"); // not Gatling's default warm-up URL on the internet
    return shareConnections ? p.shareConnections() : p;
  }

  static HttpProtocolBuilder protocol() {
    return protocol(Params.urls(), Params.bool("hb.shareConnections", true));
  }

  static FeederBuilder<Object> feeder(Fleet fleet) {
    String kind = Params.string("hb.feeder", "circular");
    FeederBuilder<Object> f = listFeeder(fleet.records());
    return switch (kind) {
      case "circular" -> f.circular();
      case "random" -> f.random();
      default -> throw new IllegalArgumentException("hb.feeder: '" + kind + "' must be circular or random");
    };
  }

  /** One heartbeat per virtual user, as the agent in the feeder record. */
  static ScenarioBuilder heartbeats(Fleet fleet) {
    return scenario("heartbeat storm")
        .feed(feeder(fleet))
        .exec(http(REQUEST)
            .post("/v1/nodes/#{node_id}/heartbeat")
            .header("Authorization", "Bearer #{agent_token}")
            .header("Content-Type", "application/json")
            .body(StringBody(session -> fleet.body(session.getString("node_id"))))
            .check(
                status().is(200),
                // the answer applied as the agent applies it; anything malformed fails the request
                bodyString().transformWithSession((body, session) -> fleet.apply(session.getString("node_id"), body))
                    .is("ok")));
  }

  /** The arrivals: a ramp from 1/s to hb.rate over hb.ramp, then hb.rate for hb.duration. */
  static OpenInjectionStep[] injection() {
    double rate = rate();
    Duration ramp = Params.duration("hb.ramp", Duration.ofSeconds(10));
    Duration duration = Params.duration("hb.duration", Duration.ofSeconds(45));
    List<OpenInjectionStep> steps = new ArrayList<>();
    if (!ramp.isZero()) steps.add(rampUsersPerSec(Math.min(1.0, rate)).to(rate).during(ramp));
    steps.add(constantUsersPerSec(rate).during(duration));
    return steps.toArray(new OpenInjectionStep[0]);
  }

  static double rate() {
    return Params.number("hb.rate", 200, 0.1, 100_000);
  }

  /** The longest the storm can last: the ramp, the duration and a minute for the last answers. */
  static Duration maxDuration() {
    return Params.duration("hb.ramp", Duration.ofSeconds(10))
        .plus(Params.duration("hb.duration", Duration.ofSeconds(45)))
        .plusSeconds(60);
  }

  static int p99() {
    return Params.millis("hb.p99", 150);
  }

}
