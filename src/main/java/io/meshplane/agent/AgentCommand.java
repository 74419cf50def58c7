package io.meshplane.agent;

import java.time.Duration;
import io.meshplane.common.Blocking;
import io.meshplane.common.Ports;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code meshplane agent}: the reference node agent (API.md §18). Runs until SIGTERM (exit 0); exit 2 for
 * bad flags, 3 when it cannot start or its enrollment is refused.
 */
@Command(name = "agent", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Run the reference node agent: enroll once (credential and X25519 key pair kept in the state dir), then heartbeat "
        + "at the answered interval and hold a watch stream that brings changes at once, failing over between coordinators and backing off on errors. SIGTERM stops it (exit 0).")
public final class AgentCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--coordinator", required = true, split = ",", paramLabel = "URL",
      description = "coordinator API base URL(s), comma-separated (http(s)://host:port); tried in turn on failure")
  List<String> coordinators;

  @Option(names = "--enroll-token", paramLabel = "TOKEN",
      description = "enrollment token (nodes:enroll); needed only until the node is enrolled")
  String enrollToken;

  @Option(names = "--name", required = true, paramLabel = "NAME", description = "node name: a DNS label (a-z, 0-9, '-', at most 63)")
  String name;

  @Option(names = "--tags", split = ",", paramLabel = "TAG", description = "tags to enroll with, comma-separated (tag:web,tag:prod)")
  List<String> tags = new ArrayList<>();

  @Option(names = "--state-dir", paramLabel = "DIR", defaultValue = "agent-state",
      description = "where the credential, the key pair and the command ledger are kept (0700; files 0600); default: ${DEFAULT-VALUE}")
  Path stateDir;

  @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:9100",
      description = "the agent's own listener (/healthz /readyz /metrics /info); port 0: any free port; default: ${DEFAULT-VALUE}")
  String listen;

  @Option(names = "--mesh-tls", paramLabel = "HOST:PORT",
      description = "open the mesh TLS listener here: mutual TLS with the node's MeshCA certificate, refusing peers whose certificates are "
          + "revoked, expired or untrusted (GET /identity); port 0: any free port; default: off")
  String meshTls;

  @Option(names = "--ingress-listen", paramLabel = "HOST:PORT",
      description = "run the ingress edge: serve the ingress routes the coordinator gives this node on this plain HTTP listener (and answer "
          + "ACME HTTP-01 challenges there: port 80 in production); port 0: any free port; default: off")
  String ingressListen;

  @Option(names = "--ingress-tls-listen", paramLabel = "HOST:PORT",
      description = "the ingress edge's TLS listener: routes with tls=acme (with --acme-directory) and tls=meshca, their certificate chosen by SNI "
          + "(needs --ingress-listen)")
  String ingressTlsListen;

  @Option(names = "--ingress-target-override", paramLabel = "MESH_IP=IP", split = ",",
      description = "dial IP instead of a target's mesh address (testing without WireGuard: 100.64.0.3=127.0.0.1); repeatable")
  List<String> ingressOverrides = new ArrayList<>();

  @Option(names = "--ingress-source-override", paramLabel = "IP=MESH_IP", split = ",",
      description = "take a client connecting from IP as the mesh member at MESH_IP for exposure=mesh routes (testing without WireGuard: "
          + "127.0.0.2=100.64.0.3); repeatable")
  List<String> ingressSourceOverrides = new ArrayList<>();

  @Option(names = "--acme-directory", paramLabel = "URL",
      description = "the ACME directory for routes with tls=acme (https://acme-v02.api.letsencrypt.org/directory); the agent is the ACME client")
  String acmeDirectory;

  @Option(names = "--acme-trust", paramLabel = "PEM",
      description = "trust this CA for the ACME directory's own TLS (a test CA such as pebble's) instead of the JVM's trust store")
  Path acmeTrust;

  @Option(names = "--acme-renew-every", paramLabel = "SECONDS", hidden = true,
      description = "renew each ACME certificate this many seconds after issuance instead of at 2/3 of its lifetime (tests)")
  long acmeRenewEveryS;

  @Option(names = "--ingress-drain-linger-ms", paramLabel = "MS",
      description = "how long at most a drain of the ingress listener keeps accepting while idle keep-alive connections bring their last "
          + "request (answered with Connection: close, not reset); it ends sooner once every connection open at the drain's start has "
          + "closed; 0 to 60000; default: ${DEFAULT-VALUE}")
  long ingressDrainLingerMs = IngressListener.LINGER_MS;

  @Option(names = "--no-watch", description = "do not hold a watch stream (GET /v1/nodes/{id}/watch): learn changes from heartbeat answers only")
  boolean noWatch;

  @Override
  public Integer call() {
    List<Coordinators.Target> targets = targets(spec, coordinators);
    checkName(spec, "--name", name);
    checkTags(spec, tags);
    if (enrollToken != null && enrollToken.isBlank()) throw new CommandLine.ParameterException(spec.commandLine(), "--enroll-token is empty");
    if (enrollToken == null && !Files.exists(stateDir.resolve(StateDir.CREDENTIAL))) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--enroll-token is needed: the node is not enrolled yet (no credential in " + stateDir.toAbsolutePath() + ")");
    }
    String[] hostPort = listen(spec, "--listen", listen);
    NodeAgent.Settings settings = new NodeAgent.Settings(targets, enrollToken, name, tags, stateDir, hostPort[0], Integer.parseInt(hostPort[1]),
        Backoff.standard(), !noWatch);
    if (meshTls != null) {
      String[] m = listen(spec, "--mesh-tls", meshTls);
      settings = settings.withMeshTls(m[0], Integer.parseInt(m[1]));
    }
    if (ingressListen != null) {
      if (ingressDrainLingerMs < 0 || ingressDrainLingerMs > 60_000) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--ingress-drain-linger-ms: 0 to 60000, not " + ingressDrainLingerMs);
      }
      settings = settings.withIngress(ingress(spec, ingressListen, ingressTlsListen, ingressOverrides, acmeDirectory, acmeTrust, acmeRenewEveryS)
          .withDrainLinger(ingressDrainLingerMs).withSourceOverrides(addressMap(spec, "--ingress-source-override", ingressSourceOverrides)));
    } else if (ingressTlsListen != null || !ingressOverrides.isEmpty() || !ingressSourceOverrides.isEmpty() || acmeDirectory != null) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--ingress-tls-listen, --ingress-target-override, --ingress-source-override and --acme-directory need --ingress-listen");
    }
    NodeAgent agent;
    try {
      agent = NodeAgent.start(settings);
    } catch (IllegalStateException e) {
      System.err.println("agent: " + e.getMessage());
      return 3;
    }
    // SIGTERM (and Ctrl-C): stop the heartbeats and the listener, close Vert.x, exit 0
    Thread hook = new Thread(() -> {
      agent.close();
      Runtime.getRuntime().halt(0);
    }, "meshplane-agent-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    // the command line's own thread waits here until the agent cannot go on (never an event loop)
    int code = Blocking.await(agent.fatal(), Duration.ofDays(36_500), "the agent");
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      return 0; // the hook is already stopping the agent
    }
    agent.close();
    return code;
  }

  static List<Coordinators.Target> targets(CommandSpec spec, List<String> urls) {
    try {
      return Coordinators.parse(urls);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
  }

  static void checkName(CommandSpec spec, String option, String value) {
    if (value == null || !AgentSession.LABEL.matcher(value).matches()) {
      throw new CommandLine.ParameterException(spec.commandLine(), option + ": '" + value + "' must be a DNS label (a-z, 0-9, '-', at most 63)");
    }
  }

  static void checkTags(CommandSpec spec, List<String> tags) {
    if (tags.size() > 32) throw new CommandLine.ParameterException(spec.commandLine(), "--tags: at most 32 tags");
    for (String t : tags) {
      if (!AgentSession.TAG.matcher(t).matches()) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--tags: '" + t + "' must be tag:<slug> (tag:web)");
      }
    }
  }

  /** The ingress edge's settings from its options (checked: addresses, URLs, files). */
  static IngressEdge.Settings ingress(CommandSpec spec, String listenAt, String tlsAt, List<String> overrides, String directory, Path trust,
      long renewEveryS) {
    String[] p = listen(spec, "--ingress-listen", listenAt);
    IngressEdge.Settings s = new IngressEdge.Settings(p[0], Integer.parseInt(p[1]));
    if (tlsAt != null) {
      // without --acme-directory the TLS listener serves the tls=meshca routes only (their certificates come from MeshCA)
      String[] t = listen(spec, "--ingress-tls-listen", tlsAt);
      s = s.withTls(t[0], Integer.parseInt(t[1]));
    }
    java.util.Map<String, String> map = addressMap(spec, "--ingress-target-override", overrides);
    s = s.withOverrides(map);
    if (directory != null) {
      java.net.URI uri;
      try {
        uri = java.net.URI.create(directory);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--acme-directory: '" + directory + "' is not a URL");
      }
      if (!"https".equals(uri.getScheme()) && !"http".equals(uri.getScheme()) || uri.getHost() == null) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--acme-directory: '" + directory + "' must be an http(s) URL");
      }
      if (trust != null && !Files.isReadable(trust)) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--acme-trust: " + trust + " is not a readable file");
      }
      if (renewEveryS < 0) throw new CommandLine.ParameterException(spec.commandLine(), "--acme-renew-every: must not be negative");
      s = s.withAcme(uri, trust, renewEveryS * 1000);
    } else if (trust != null) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--acme-trust needs --acme-directory");
    }
    return s;
  }

  /** {@code A=B} pairs of IP addresses (no names), checked, in order. */
  static java.util.Map<String, String> addressMap(CommandSpec spec, String option, List<String> pairs) {
    java.util.Map<String, String> map = new java.util.LinkedHashMap<>();
    for (String o : pairs) {
      int eq = o.indexOf('=');
      if (eq <= 0 || eq == o.length() - 1 || o.indexOf('=', eq + 1) >= 0) {
        throw new CommandLine.ParameterException(spec.commandLine(), option + ": '" + o + "' must be IP=IP");
      }
      String from = o.substring(0, eq).trim();
      String to = o.substring(eq + 1).trim();
      if (!from.matches("[0-9a-fA-F:.]{2,45}") || !to.matches("[0-9a-fA-F:.]{2,45}")) {
        throw new CommandLine.ParameterException(spec.commandLine(), option + ": '" + o + "' must be IP=IP (IP addresses, no names)");
      }
      map.put(from, to);
    }
    return map;
  }

  /** {@code host:port} or {@code [v6]:port} → {host, port}. */
  static String[] listen(CommandSpec spec, String value) {
    return listen(spec, "--listen", value);
  }

  static String[] listen(CommandSpec spec, String option, String value) {
    int colon = value == null ? -1 : value.lastIndexOf(':');
    if (colon <= 0) throw new CommandLine.ParameterException(spec.commandLine(), option + ": '" + value + "' must be HOST:PORT");
    String host = value.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
    // 0 (any free port) or a port as the coordinator reads one: no sign, no leading zero, ASCII digits
    int port = Ports.parseOrZero(value.substring(colon + 1));
    if (port < 0 || host.isEmpty()) {
      throw new CommandLine.ParameterException(spec.commandLine(), option + ": '" + value + "' must be HOST:PORT with a port 0-65535");
    }
    return new String[] {host, Integer.toString(port)};
  }
}
