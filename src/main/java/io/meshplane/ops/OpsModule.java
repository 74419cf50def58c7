package io.meshplane.ops;

import io.meshplane.access.Caller;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.RequestInfo;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeReader;
import io.meshplane.node.NodeWork;
import io.meshplane.node.Relays;
import io.meshplane.observe.MeshMetrics;
import io.micrometer.core.instrument.Gauge;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Node operations, ingress and services as a module (API.md §9, §11): the routes, this replica's
 * {@link OpsBoard} (following the change log), the expiry sweep, and the {@link NodeWork} door through
 * which the heartbeat asks what to send a node and hands over the agent's command results.
 */
public final class OpsModule implements Module, NodeWork {
  private final Vertx vertx;
  private final OpsBoard board = new OpsBoard();
  private final OpsService service;
  private final Cursors cursors;
  private final long sweepMs;
  private long sweepTimer = -1;
  private boolean sweeping;

  /**
   * @param reads the read pool (its own connections, postgres.read_timeout per statement): the fleet-wide list
   * @param deadline how long an operation may stay open ({@code operations.deadline})
   */
  public OpsModule(Vertx vertx, Pool pool, Pool reads, AuditLog audit, ChangeLog.Feed feed, NodeReader nodes, Relays relays, MeshMetrics metrics,
      Cursors cursors, Duration deadline) {
    this.vertx = vertx;
    this.cursors = cursors;
    this.service = new OpsService(pool, new OpsRepository(pool, reads), audit, feed, nodes, relays, deadline, metrics.registry());
    // expiry is checked a few times per deadline, at most every 5 s
    this.sweepMs = Math.max(200, Math.min(5000, deadline.toMillis() / 4));
    feed.follow(board);
    Gauge.builder("mesh.ops.board.nodes", board, OpsBoard::size)
        .description("Nodes with bound services, ingress or open operations, as this replica's board holds them").register(metrics.registry());
  }

  @Override
  public String name() {
    return "operations";
  }

  @Override
  public Future<Void> start() {
    sweepTimer = vertx.setPeriodic(sweepMs, t -> {
      if (sweeping) return;
      sweeping = true;
      Future<?> swept;
      try {
        swept = service.expireOverdue();
      } catch (RuntimeException e) {
        swept = Future.failedFuture(e); // never leave `sweeping` set
      }
      swept.onComplete(ar -> sweeping = false);
    });
    return Future.succeededFuture();
  }

  @Override
  public void routes(Api api) {
    OpsRoutes.mount(api, service, cursors);
  }

  /** How many operations of the caller's boundary are in flight (pending or delivered): the panel's overview. */
  public Future<Long> inFlight(io.meshplane.access.Caller caller) {
    return service.inFlight(caller);
  }

  /**
   * Operations closed by this replica since it started, by outcome (cumulative, counted after the
   * commit): the panel's overview samples them into its per-replica series. The counts stay here.
   */
  public OperationOutcomes outcomes() {
    return service.outcomes();
  }

  /**
   * {@code POST /nodes/{id}/rekey} as its route calls it (the same scope rule, audit event and 409 when
   * one is open): the new operation, for features acting on many nodes (bulk).
   */
  public Future<JsonObject> rekey(Caller caller, RequestInfo request, String nodeId) {
    return service.rekey(caller, request, nodeId);
  }

  /** {@code POST /nodes/{id}/certificate/reissue} as its route calls it: the new operation. */
  public Future<JsonObject> reissue(Caller caller, RequestInfo request, String nodeId) {
    return service.reissue(caller, request, nodeId);
  }

  @Override
  public boolean awaits(String nodeId, String kind) {
    OpsBoard.Work w = board.get(nodeId);
    if (w == null) return false;
    for (OpsBoard.Open o : w.open().values()) if (o.kind().equals(kind)) return true;
    return false;
  }

  @Override
  public Future<Void> stop() {
    vertx.cancelTimer(sweepTimer);
    return Future.succeededFuture();
  }

  // ---- NodeWork ----

  @Override
  public void answer(String nodeId, Buffer out) {
    OpsBoard.Work w = board.get(nodeId);
    if (w == null) {
      out.appendBytes(OpsBoard.NOTHING);
      return;
    }
    out.appendBytes(w.answer());
    if (!w.open().isEmpty()) service.delivered(List.copyOf(w.open().keySet()));
  }

  @Override
  public Object state(String nodeId) {
    return board.get(nodeId);
  }

  @Override
  public void reported(String nodeId, Caller node, RequestInfo request, Report report) {
    OpsBoard.Work w = board.get(nodeId);
    for (JsonObject r : report.results()) {
      OpsBoard.Open op = w == null ? null : w.open().get(r.getString("id"));
      if (op == null) {
        // unknown, already completed, or another node's operation: never applied anywhere
        service.ignored();
        continue;
      }
      String claimed = r.getString("status");
      String detail = r.getString("detail", "");
      JsonObject result = new JsonObject().put("reported", new JsonObject().put("status", claimed).put("detail", detail));
      String contradiction = "succeeded".equals(claimed) ? contradiction(op, report) : null;
      String status;
      if (!"succeeded".equals(claimed)) {
        status = "failed";
        result.put("detail", detail.isEmpty() ? "the agent reported failure" : detail);
      } else if (contradiction != null) {
        status = "failed";
        result.put("detail", contradiction);
      } else {
        status = "succeeded";
        result.put("detail", detail);
        if (op.kind().equals("rekey")) result.put("new_key", report.publicKey());
        if (op.kind().equals(REISSUE)) result.put("new_serial", report.pkiSerial());
      }
      JsonObject evidence = op.kind().equals("drain_ingress") ? drainEvidence(detail) : null;
      if (evidence != null) {
        result.put("evidence", evidence);
        if ("succeeded".equals(status) && evidence.getLong("open_connections") > 0) {
          status = "failed";
          result.put("detail", "the agent reported success but " + evidence.getLong("open_connections") + " connections still open");
        }
      }
      service.complete(Actor.of(node), request, nodeId, op.id(), status, result);
    }
  }

  @Override
  public void keyRefused(String nodeId, Caller node, RequestInfo request, List<JsonObject> results) {
    OpsBoard.Work w = board.get(nodeId);
    for (JsonObject r : results) {
      OpsBoard.Open op = w == null ? null : w.open().get(r.getString("id"));
      if (op == null || !op.kind().equals("rekey")) continue;
      JsonObject result = new JsonObject().put("reported", new JsonObject().put("status", r.getString("status"))
          .put("detail", r.getString("detail", ""))).put("detail", "the new public_key is the key of another node of the mesh");
      service.complete(Actor.of(node), request, nodeId, op.id(), "failed", result);
    }
  }

  /**
   * A drain's evidence in the agent's detail ({@code … {"open_connections":0,"requests_during_drain":12}}):
   * those two counts when present and well formed, else null (an agent without an ingress listener sends none).
   */
  static JsonObject drainEvidence(String detail) {
    int brace = detail.indexOf('{');
    if (brace < 0) return null;
    try {
      JsonObject j = new JsonObject(detail.substring(brace));
      if (!(j.getValue("open_connections") instanceof Number open) || !(j.getValue("requests_during_drain") instanceof Number during)
          || open.longValue() < 0 || during.longValue() < 0) {
        return null;
      }
      return new JsonObject().put("open_connections", open.longValue()).put("requests_during_drain", during.longValue());
    } catch (RuntimeException notJson) {
      return null;
    }
  }

  /**
   * Why the heartbeat that carries a success contradicts it, or null when it shows the effect: a key
   * other than the one before the re-key, the relay moved to, the ingress drained.
   */
  static String contradiction(OpsBoard.Open op, Report report) {
    JsonObject t = op.target();
    switch (op.kind()) {
      case "rekey" -> {
        if (report.publicKey() == null) return "the agent reported success but its heartbeat carried no public_key";
        if (report.publicKey().equals(t.getString("old_key"))) return "the agent reported success but its heartbeat still shows the old public_key";
        return null;
      }
      case REISSUE -> {
        if (report.pkiSerial() == null) return "the agent reported success but its heartbeat carried no certificate serial";
        if (report.pkiSerial().equals(t.getString("old_serial"))) {
          return "the agent reported success but its heartbeat still shows the certificate " + t.getString("old_serial");
        }
        return null;
      }
      case "move_relay" -> {
        String want = t.getString("relay");
        if (!Objects.equals(want, report.relay())) {
          return "the agent reported success but its heartbeat shows relay " + (report.relay() == null ? "(none)" : report.relay())
              + ", not " + want;
        }
        return null;
      }
      case "drain_ingress" -> {
        String name = t.getString("name");
        List<String> states = new ArrayList<>();
        for (JsonObject in : report.ingress()) if (name.equals(in.getString("name"))) states.add(in.getString("state"));
        if (!states.contains("drained")) {
          return "the agent reported success but its heartbeat shows ingress " + name + " " + (states.isEmpty() ? "absent" : states.get(0));
        }
        return null;
      }
      default -> {
        return "unknown operation kind " + op.kind();
      }
    }
  }
}
