package io.meshplane.agent;

import java.time.Duration;
import io.meshplane.common.Blocking;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.ThreadingModel;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running reference agent ({@code meshplane agent}): its own small Vert.x (one event loop) and the
 * {@link AgentVerticle}. Started by the command and, in-process, by tests.
 */
public final class NodeAgent implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

  /**
   * What the agent is told on its command line.
   *
   * @param enrollToken null when the state dir already holds a credential
   * @param listenPort 0: any free port (logged)
   * @param watch hold a watch stream besides the heartbeats ({@code --no-watch}: false)
   * @param meshTlsHost meshTlsPort the mesh TLS listener ({@code --mesh-tls}); port -1: off, 0: any free port
   * @param ingress the ingress edge ({@code --ingress-listen} and its options); null: none
   */
  public record Settings(List<Coordinators.Target> coordinators, String enrollToken, String name, List<String> tags, Path stateDir,
      String listenHost, int listenPort, Backoff backoff, boolean watch, String meshTlsHost, int meshTlsPort, IngressEdge.Settings ingress) {
    public Settings {
      coordinators = List.copyOf(coordinators);
      tags = List.copyOf(tags);
    }

    /** Without an ingress edge. */
    public Settings(List<Coordinators.Target> coordinators, String enrollToken, String name, List<String> tags, Path stateDir,
        String listenHost, int listenPort, Backoff backoff, boolean watch, String meshTlsHost, int meshTlsPort) {
      this(coordinators, enrollToken, name, tags, stateDir, listenHost, listenPort, backoff, watch, meshTlsHost, meshTlsPort, null);
    }

    /** These settings with an ingress edge. */
    Settings withIngress(IngressEdge.Settings edge) {
      return new Settings(coordinators, enrollToken, name, tags, stateDir, listenHost, listenPort, backoff, watch, meshTlsHost, meshTlsPort, edge);
    }

    /** Without the mesh TLS listener (the default). */
    public Settings(List<Coordinators.Target> coordinators, String enrollToken, String name, List<String> tags, Path stateDir,
        String listenHost, int listenPort, Backoff backoff, boolean watch) {
      this(coordinators, enrollToken, name, tags, stateDir, listenHost, listenPort, backoff, watch, null, -1);
    }

    /** These settings with the mesh TLS listener on {@code host:port} (0: any free port). */
    public Settings withMeshTls(String host, int port) {
      return new Settings(coordinators, enrollToken, name, tags, stateDir, listenHost, listenPort, backoff, watch, host, port, ingress);
    }

    /** Without the watch stream (heartbeat answers only): tests that script a coordinator stand-in without the route. */
    public Settings(List<Coordinators.Target> coordinators, String enrollToken, String name, List<String> tags, Path stateDir,
        String listenHost, int listenPort, Backoff backoff) {
      this(coordinators, enrollToken, name, tags, stateDir, listenHost, listenPort, backoff, false);
    }
  }

  private final Vertx vertx;
  private final AgentVerticle verticle;
  private final Promise<Integer> fatal;
  private final int port;
  private volatile boolean closed;

  private NodeAgent(Vertx vertx, AgentVerticle verticle, Promise<Integer> fatal, int port) {
    this.vertx = vertx;
    this.verticle = verticle;
    this.fatal = fatal;
    this.port = port;
  }

  /**
   * Starts the agent and waits until its listener is bound (the enrollment and the heartbeats go on in
   * the background).
   *
   * @throws IllegalStateException with an operator-facing message when it cannot start (state dir, port)
   */
  public static NodeAgent start(Settings settings) {
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(2).setInternalBlockingPoolSize(2));
    Promise<Integer> fatal = Promise.promise();
    AgentVerticle verticle = new AgentVerticle(settings, fatal);
    try {
      // from the command line's thread (Blocking refuses an event loop)
      Blocking.await(vertx.deployVerticle(verticle, new DeploymentOptions().setThreadingModel(ThreadingModel.EVENT_LOOP)),
          Duration.ofSeconds(30), "starting the agent");
    } catch (Exception e) {
      close(vertx);
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      String msg = cause.getMessage() == null ? cause.toString() : cause.getMessage();
      if (!msg.startsWith("--mesh-tls") && !msg.startsWith("--ingress") && (msg.contains("Address already in use") || cause instanceof java.net.BindException)) {
        msg = "cannot listen on " + settings.listenHost() + ":" + settings.listenPort() + ": " + msg;
      }
      throw new IllegalStateException(msg, e);
    }
    return new NodeAgent(vertx, verticle, fatal, verticle.listenerPort());
  }

  /** The listener's actual port. */
  public int listenPort() {
    return port;
  }

  /** The mesh TLS listener's actual port, or -1 when it is off. */
  public int meshTlsPort() {
    return verticle.meshTls().port();
  }

  /** The ingress edge, or null without {@code --ingress-listen}. */
  IngressEdge ingress() {
    return verticle.ingress();
  }

  /** Completes with an exit code when the agent cannot go on (its enrollment was refused, say). */
  public Future<Integer> fatal() {
    return fatal.future();
  }

  AgentVerticle verticle() {
    return verticle;
  }

  /** Stops the heartbeats and the listener and closes Vert.x; waits at most 5 s. Idempotent. */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    LOG.info("agent stopping");
    close(vertx);
    LOG.info("agent stopped");
  }

  private static void close(Vertx vertx) {
    try {
      Blocking.await(vertx.close(), Duration.ofSeconds(5), "closing Vert.x");
    } catch (Exception e) {
      LOG.warn("Vert.x did not close within 5 s: {}", e.toString());
    }
  }
}
