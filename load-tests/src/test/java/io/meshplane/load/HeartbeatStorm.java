package io.meshplane.load;

import static io.gatling.javaapi.core.CoreDsl.details;
import static io.gatling.javaapi.core.CoreDsl.global;

import io.gatling.javaapi.core.Simulation;

/**
 * A heartbeat storm: {@code POST /v1/nodes/{id}/heartbeat} in the open injection model, each arrival
 * one virtual agent of the feeder ({@code target/agents.csv}, see {@link PrepareAgents}) with its own
 * agent credential and the versions it holds, spread round-robin over the coordinator URLs.
 *
 * <pre>
 * mvn -B gatling:test -Dgatling.simulationClass=io.meshplane.load.HeartbeatStorm \
 *     -Durls=http://127.0.0.1:8080,http://127.0.0.1:8090 -Dhb.rate=200 -Dhb.duration=45s
 * </pre>
 *
 * Fails the run on any failed request (a non-200, or an answer that is not a valid heartbeat answer)
 * and when the p99 of "heartbeat" is not below hb.p99 (150 ms). Parameters: see {@link Storm}.
 */
public class HeartbeatStorm extends Simulation {
  private final Fleet fleet = Fleet.load(Params.agentsFile());

  {
    System.out.printf("HeartbeatStorm: %d agents from %s, %.1f heartbeats/s over %s%n", fleet.agents.size(),
        Params.agentsFile(), Storm.rate(), Params.urls());
    setUp(Storm.heartbeats(fleet).injectOpen(Storm.injection()).protocols(Storm.protocol()))
        .maxDuration(Storm.maxDuration())
        .assertions(
            global().failedRequests().count().is(0L),
            details(Storm.REQUEST).responseTime().percentile(99.0).lt(Storm.p99()));
  }

  @Override
  public void after() {
    System.out.println("HeartbeatStorm: " + fleet.counters.summary());
  }
}
