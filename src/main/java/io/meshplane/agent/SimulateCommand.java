package io.meshplane.agent;

import io.meshplane.common.Durations;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code meshplane simulate}: a fleet of simulated nodes in one process, for load and soak tests of a
 * coordinator. Bounded in count (at most 1,000,000 nodes) and time (at most 24 h), and loopback-only
 * unless {@code --allow-remote}: exit 2 for any of these refusals and for bad flags.
 */
@Command(name = "simulate", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Simulate a fleet of node agents in one process (same protocol code as the agent) against coordinators on this "
        + "machine. Prints a summary line every 10 s on stdout and a final one; exits when --duration has passed.")
public final class SimulateCommand implements Callable<Integer> {
  private static final Pattern PREFIX = Pattern.compile("^[a-z0-9][a-z0-9-]{0,47}$");

  @Spec CommandSpec spec;

  @Option(names = "--coordinator", required = true, split = ",", paramLabel = "URL",
      description = "coordinator API base URL(s), comma-separated; each node fails over between them")
  List<String> coordinators;

  @Option(names = "--enroll-token", required = true, paramLabel = "TOKEN", description = "enrollment token (nodes:enroll) every node enrolls with")
  String enrollToken;

  @Option(names = "--nodes", required = true, paramLabel = "N", description = "simulated nodes, 1 to 1000000")
  int nodes;

  @Option(names = "--interval", required = true, paramLabel = "DURATION",
      description = "heartbeat interval of every node (30s), used whatever interval the coordinator answers; 1s to 1h")
  String interval;

  @Option(names = "--duration", required = true, paramLabel = "DURATION", description = "how long the run lasts, enrollment included (10m); at most 24h")
  String duration;

  @Option(names = "--name-prefix", paramLabel = "PREFIX", defaultValue = "sim",
      description = "node names are <prefix>-<run id>-<n>; default: ${DEFAULT-VALUE}")
  String namePrefix;

  @Option(names = "--tags", split = ",", paramLabel = "TAG", description = "tags every node enrolls with, comma-separated")
  List<String> tags = new ArrayList<>();

  @Option(names = "--spread-tags", paramLabel = "N", defaultValue = "0",
      description = "spread the fleet over N tags: a --tags entry ending in a number k becomes, for node n, the same tag ending in (k + n) mod N "
          + "(--tags tag:t0 --spread-tags 100: tag:t0 to tag:t99); 0 (the default): every node gets --tags as given")
  int spreadTags;

  @Option(names = "--concurrency", paramLabel = "N", defaultValue = "64",
      description = "HTTP connections per coordinator, and enrollments in flight at most; 1 to 4096; default: ${DEFAULT-VALUE}")
  int concurrency;

  @Option(names = "--policy-churn", paramLabel = "DURATION",
      description = "every DURATION (10s to 1h), replace the policy of the nodes' team and environment (PUT /v1/acl with --policy-token): "
          + "up to 50 grants between the --spread-tags tags, whose direction and ports change each time, so the rules of every node in "
          + "them change; each change is reported with how many nodes got new rules and when the last one did")
  String policyChurn;

  @Option(names = "--policy-token", paramLabel = "TOKEN", description = "a token with acl:write on the nodes' team and environment, for --policy-churn")
  String policyToken;

  @Option(names = "--watch", description = "every node also holds a watch stream (GET /v1/nodes/{id}/watch) from its first accepted heartbeat on; "
      + "the summary lines then report the streams and the delay of each kind of change")
  boolean watch;

  @Option(names = "--watch-http2", negatable = true, defaultValue = "true", fallbackValue = "true",
      description = "with --watch: carry the streams over HTTP/2 (cleartext with prior knowledge), multiplexed; --no-watch-http2: HTTP/1.1, "
          + "one connection per stream; default: on")
  boolean watchHttp2;

  @Option(names = "--watch-streams-per-connection", paramLabel = "N", defaultValue = "1000",
      description = "with --watch over HTTP/2: streams at most per connection (the server's own limit applies too); 1 to 100000; default: ${DEFAULT-VALUE}")
  int streamsPerConnection;

  @Option(names = "--source-addresses", split = ",", paramLabel = "IP",
      description = "local addresses to connect from (127.0.0.2,127.0.0.3,...): one HTTP client each, the streams spread over them; "
          + "one address has about 28,000 ephemeral ports")
  List<String> sourceAddresses = new ArrayList<>();

  @Option(names = "--ingress-tag", paramLabel = "TAG",
      description = "the nodes whose tags include TAG (with --spread-tags, those it lands on) act as ingress nodes: each applies the ingress "
          + "routes version its answers carry and reports it as an agent's edge does (no listener, no proxy; a drain_ingress succeeds at once); "
          + "the lines count the nodes per routes version and when the latest applied one")
  String ingressTag;

  @Option(names = "--final-check", description = "after --duration: stop --policy-churn, let the fleet settle (until no node's versions "
      + "moved for 5 s, at most 60 s), stop the regular heartbeats, and have every enrolled node send one heartbeat with the versions it holds; "
      + "a node whose answer has a newer peers or acl version had missed a change. Prints a line with the nodes checked, behind (per kind, "
      + "with examples), unanswered and, with --watch, not streaming; exit 4 when any is behind or unanswered")
  boolean finalCheck;

  @Option(names = "--certificates", description = "every node makes its own ECDSA P-256 key (one per simulated node) and sends a real CSR in its "
      + "heartbeats until MeshCA issues its certificate, as the agent does; the lines count certificates adopted, deferred by the signing "
      + "budget and refused, and sampled pairs (A's certificate under B's bundle at B's clock, skewed by a fixed amount within ±5 min) "
      + "checked and failed")
  boolean certificates;

  @Option(names = "--skew-clocks", description = "with --certificates: each node's own renewal, expiry and verification decisions run at its "
      + "skewed clock too (as the pair checks always do); leave it off with certificate lifetimes of minutes, which a node 5 min ahead sees "
      + "expired")
  boolean skewClocks;

  @Option(names = "--control", paramLabel = "FILE",
      description = "commands to the running simulation, appended to FILE as lines (read every second; the file may appear later): "
          + "'offline FRACTION' (0 < FRACTION <= 1) takes that fraction of the enrolled fleet offline (no heartbeat, no stream; each "
          + "keeps its certificate, bundle and versions; the same nodes for the same fraction), 'online' brings every offline node back "
          + "(its first heartbeat within a second). The lines then report the nodes offline, returned and current again (the bundle "
          + "and issuer most online nodes hold, the certificate valid), the longest time from a return to current, and the pairs with "
          + "returned nodes apart; offline and returned-but-not-current nodes are left out of the pair checks")
  java.nio.file.Path control;

  @Option(names = "--allow-remote", description = "allow coordinators that are not on this machine (by default every address must be loopback)")
  boolean allowRemote;

  @Override
  public Integer call() {
    List<Coordinators.Target> targets = AgentCommand.targets(spec, coordinators);
    AgentCommand.checkTags(spec, tags);
    if (ingressTag != null && !AgentSession.TAG.matcher(ingressTag).matches()) return refuse("--ingress-tag " + ingressTag + " is not a tag (tag:name)");
    if (!PREFIX.matcher(namePrefix).matches()) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--name-prefix: '" + namePrefix + "' must be 1-48 of a-z, 0-9, '-' (starting with a letter or digit)");
    }
    if (nodes < 1 || nodes > Simulator.MAX_NODES) {
      return refuse("--nodes " + nodes + " is outside 1.." + Simulator.MAX_NODES);
    }
    Duration every = duration(interval, "--interval");
    Duration length = duration(duration, "--duration");
    if (every.compareTo(Duration.ofSeconds(1)) < 0 || every.compareTo(Duration.ofHours(1)) > 0) {
      return refuse("--interval " + interval + " is outside 1s..1h");
    }
    if (length.isZero() || length.compareTo(Simulator.MAX_DURATION) > 0) {
      return refuse("--duration " + duration + " is outside 1ms..24h: a simulation is bounded in time");
    }
    if (concurrency < 1 || concurrency > 4096) return refuse("--concurrency " + concurrency + " is outside 1..4096");
    if (spreadTags < 0 || spreadTags > 100_000) return refuse("--spread-tags " + spreadTags + " is outside 0..100000");
    if (spreadTags > 0 && tags.stream().noneMatch(t -> Simulator.NUMBERED.matcher(t).matches())) {
      return refuse("--spread-tags needs a --tags entry ending in a number (tag:t0)");
    }
    if (enrollToken.isBlank()) return refuse("--enroll-token is empty");
    Duration churn = Duration.ZERO;
    if (policyChurn != null) {
      churn = duration(policyChurn, "--policy-churn");
      if (churn.compareTo(Duration.ofSeconds(10)) < 0 || churn.compareTo(Duration.ofHours(1)) > 0) return refuse("--policy-churn " + policyChurn + " is outside 10s..1h");
      if (policyToken == null || policyToken.isBlank()) return refuse("--policy-churn needs --policy-token (a token with acl:write on the nodes' team and environment)");
      if (spreadTags < 2) return refuse("--policy-churn needs --spread-tags of at least 2: its grants join the spread tags in pairs");
    } else if (policyToken != null) {
      return refuse("--policy-token is only used with --policy-churn");
    }
    if (!allowRemote) {
      for (Coordinators.Target t : targets) {
        String why = notLoopback(t.host());
        if (why != null) {
          return refuse("refusing to simulate against " + t.url() + ": " + why
              + "; a simulation loads its target like a fleet: run it against coordinators on this machine, or pass --allow-remote for a test environment you own");
        }
      }
    }
    for (String a : sourceAddresses) {
      if (!IP_LITERAL.matcher(a).matches()) return refuse("--source-addresses: '" + a + "' is not an IP address (127.0.0.2)");
    }
    if (sourceAddresses.size() > 256) return refuse("--source-addresses: at most 256 addresses");
    if (streamsPerConnection < 1 || streamsPerConnection > 100_000) return refuse("--watch-streams-per-connection " + streamsPerConnection + " is outside 1..100000");
    if (watch) {
      // every stream of a client could end up on one coordinator: count its connections per source address
      long streamConnections = watchHttp2 ? (nodes + streamsPerConnection - 1L) / streamsPerConnection : nodes;
      long perAddress = (streamConnections + Math.max(1, sourceAddresses.size()) - 1) / Math.max(1, sourceAddresses.size());
      if (perAddress > EPHEMERAL_PORTS) {
        return refuse("--watch needs " + streamConnections + " connections, " + perAddress + " per source address: more than the " + EPHEMERAL_PORTS
            + " ephemeral ports of one address; use --watch-http2, more --watch-streams-per-connection or more --source-addresses");
      }
      long files = streamConnections + (long) concurrency * targets.size() + 64;
      long limit = maxOpenFiles();
      if (limit > 0 && files > limit) {
        System.err.printf("simulate: warning: about %d open files needed, the process may hold %d (ulimit -n); streams beyond will be refused as connect errors%n",
            files, limit);
      }
    }
    Simulator.Watch w = new Simulator.Watch(watch, watchHttp2, streamsPerConnection, sourceAddresses);
    return new Simulator(new Simulator.Settings(targets, enrollToken, nodes, every, length, namePrefix, tags, spreadTags, concurrency, churn,
        policyToken, w, finalCheck, certificates, skewClocks, control, ingressTag), System.out).run();
  }

  /** Ephemeral ports of one source address (Linux's default range 32768-60999). */
  static final int EPHEMERAL_PORTS = 28_000;
  private static final Pattern IP_LITERAL = Pattern.compile("^(\\d{1,3}(\\.\\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*)$");

  /** The process's open-file limit, or -1 when the JVM cannot tell. */
  static long maxOpenFiles() {
    if (java.lang.management.ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean os) {
      return os.getMaxFileDescriptorCount();
    }
    return -1;
  }

  private Duration duration(String text, String option) {
    try {
      return Durations.parse(text);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), option + ": " + e.getMessage());
    }
  }

  private static int refuse(String message) {
    System.err.println("simulate: " + message);
    return 2;
  }

  /** Null when every address of {@code host} is a loopback address; else why not. */
  static String notLoopback(String host) {
    InetAddress[] all;
    try {
      all = InetAddress.getAllByName(host);
    } catch (UnknownHostException e) {
      return "host " + host + " does not resolve";
    }
    for (InetAddress a : all) {
      if (!a.isLoopbackAddress()) {
        return "host " + host + " resolves to " + Arrays.stream(all).map(InetAddress::getHostAddress).toList() + ", not only loopback addresses";
      }
    }
    return null;
  }
}
