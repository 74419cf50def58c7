package io.meshplane;

import io.meshplane.app.Component;
import io.meshplane.app.ConfigException;
import io.meshplane.app.ConfigLoader;
import io.meshplane.app.Database;
import io.meshplane.app.MeshConfig;
import io.meshplane.app.Meshplane;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/** The command line: {@code run}, {@code migrate}, and the bootstrap commands. */
@Command(name = "meshplane", mixinStandardHelpOptions = true, version = "meshplane 0.1.0",
    description = "Control plane of a private overlay network.",
    subcommands = {Main.Run.class, Main.Migrate.class, Main.Token.class, Main.User.class, io.meshplane.agent.AgentCommand.class,
        io.meshplane.agent.SimulateCommand.class, io.meshplane.backup.SnapshotCommand.class,
        io.meshplane.meshca.CaCommand.class})
public final class Main {
  static final Logger LOG = LoggerFactory.getLogger(Main.class);
  /** Exit code for a configuration the process refuses to start with. */
  static final int EXIT_CONFIG = 2;
  /** Exit code for a start that failed for another reason (database, cluster, port in use). */
  static final int EXIT_START = 3;
  private static final String COMMON_POOL_PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";

  public static void main(String[] args) {
    // Hazelcast completes its async calls on ForkJoinPool.commonPool, unless that pool has fewer than
    // two threads (a 2-core machine): then it starts a new thread per completion, which cut heartbeat
    // throughput by an order of magnitude here. Must be set before anything touches the common pool.
    if (System.getProperty(COMMON_POOL_PARALLELISM) == null) System.setProperty(COMMON_POOL_PARALLELISM, "4");
    CommandLine cli = new CommandLine(new Main());
    cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
      if (e instanceof ConfigException) {
        System.err.println("configuration error: " + e.getMessage());
        return EXIT_CONFIG;
      }
      LOG.error("{} failed: {}", cmd.getCommandName(), e.getMessage(), e);
      System.err.println(cmd.getCommandName() + " failed: " + e.getMessage());
      return EXIT_START;
    });
    int code = cli.execute(args);
    Object last = cli.getParseResult() == null ? null : lastCommand(cli.getParseResult());
    // A started service keeps running on its own (non-daemon) threads; everything else exits now.
    if (!(last instanceof Run) || code != 0) System.exit(code);
  }

  private static Object lastCommand(CommandLine.ParseResult result) {
    CommandLine.ParseResult r = result;
    while (r.hasSubcommand()) r = r.subcommand();
    return r.commandSpec().userObject();
  }

  /** Options every command shares: where the settings come from. */
  static class ConfigOptions {
    @Option(names = "--config", paramLabel = "FILE",
        description = "settings file (default: config/meshplane.yaml when it exists; MESH_* environment variables override it)")
    Path file;

    MeshConfig load() {
      Path path = file != null ? file : Path.of("config", "meshplane.yaml");
      for (String name : ConfigLoader.unknownEnvironment(System.getenv())) {
        LOG.warn("environment variable {} is not a Meshplane setting (a typo?); it is ignored", name);
      }
      return ConfigLoader.load(path, file != null, System.getenv(), Map.of());
    }
  }

  @Command(name = "run", mixinStandardHelpOptions = true, description = "Run a coordinator replica (coordinator API and web panel).")
  static final class Run implements Callable<Integer> {
    @CommandLine.Mixin ConfigOptions configOptions = new ConfigOptions();

    @Option(names = "--only", paramLabel = "COMPONENT", description = "run one component: coordinator or panel")
    String only;

    @Override
    public Integer call() {
      EnumSet<Component> components;
      if (only == null) {
        components = EnumSet.allOf(Component.class);
      } else {
        try {
          components = EnumSet.of(Component.valueOf(only.toUpperCase(java.util.Locale.ROOT)));
        } catch (IllegalArgumentException e) {
          throw new ConfigException("--only: '" + only + "' is not coordinator or panel");
        }
      }
      MeshConfig config = configOptions.load();
      Meshplane app = Meshplane.launch(config, components);
      Runtime.getRuntime().addShutdownHook(new Thread(app::close, "meshplane-shutdown"));
      // The probes are served from here on; the rest of the start (PostgreSQL, which may not answer
      // yet) goes on in the background. One that cannot succeed stops the process, like a bad setting.
      app.started().onFailure(e -> new Thread(() -> {
        boolean refused = e instanceof ConfigException;
        if (refused) System.err.println("configuration error: " + e.getMessage());
        else System.err.println("run failed: " + e.getMessage());
        LOG.error("the start failed: {}", e.getMessage(), refused ? null : e);
        System.exit(refused ? EXIT_CONFIG : EXIT_START);
      }, "meshplane-exit").start());
      return 0;
    }
  }

  @Command(name = "token", mixinStandardHelpOptions = true, description = "Manage tokens from the command line.",
      subcommands = {TokenCreate.class})
  static final class Token {}

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = "Create a token straight in the database and print it (and nothing else) on stdout.")
  static final class TokenCreate implements Callable<Integer> {
    @CommandLine.Mixin ConfigOptions configOptions = new ConfigOptions();
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Option(names = "--name", required = true, description = "label, 1-64 printable characters") String name;
    @Option(names = "--team", required = true, description = "team slug or '*'") String team;
    @Option(names = "--environment", required = true, description = "environment slug or '*'") String environment;
    @Option(names = "--surface", required = true, description = "admin, operator, enrollment, pipeline or monitoring") String surface;
    @Option(names = "--expires", required = true, description = "a duration from now (30d, 12h) or an ISO 8601 timestamp") String expires;

    @Override
    public Integer call() {
      io.meshplane.common.Fields f = new io.meshplane.common.Fields();
      io.vertx.core.json.JsonObject in = new io.vertx.core.json.JsonObject()
          .put("name", name).put("team", team).put("environment", environment);
      f.label(in, "name", "--name", 64);
      f.slugOrStar(in, "team", "--team");
      f.slugOrStar(in, "environment", "--environment");
      io.meshplane.access.Surface s = io.meshplane.access.Surface.parse(surface);
      if (s == null || s == io.meshplane.access.Surface.AGENT) f.error("--surface", "must be admin, operator, enrollment, pipeline or monitoring");
      java.time.Instant until;
      try {
        until = java.time.Instant.now().plus(io.meshplane.common.Durations.parse(expires));
      } catch (IllegalArgumentException notADuration) {
        until = f.parseTimestamp(expires, "--expires");
      }
      if (!f.ok()) {
        try {
          f.check();
        } catch (io.meshplane.common.Refusal e) {
          throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
      }
      MeshConfig config = configOptions.load();
      String jwt;
      try {
        jwt = io.meshplane.app.TokenBootstrap.create(config, name, new io.meshplane.auth.Scope(team, environment, s), until);
      } catch (io.meshplane.common.Refusal | IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
      }
      System.out.println(jwt);
      return 0;
    }
  }

  @Command(name = "user", mixinStandardHelpOptions = true, description = "Manage panel users from the command line.",
      subcommands = {UserCreate.class})
  static final class User {}

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = "Create a panel user straight in the database (the first admin) and print it as JSON. The password is read"
          + " from the environment variable named by --password-env, else from the first line of stdin.")
  static final class UserCreate implements Callable<Integer> {
    @CommandLine.Mixin ConfigOptions configOptions = new ConfigOptions();
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Option(names = "--username", required = true, description = "1-64 of a-z, 0-9, . _ @ - (stored lower-case)") String username;
    @Option(names = "--role", required = true, description = "admin, operator or viewer") String role;
    @Option(names = "--team", required = true, description = "team slug or '*'") String team;
    @Option(names = "--environment", required = true, description = "environment slug or '*'") String environment;
    @Option(names = "--password-env", paramLabel = "VAR", description = "read the password from this environment variable")
    String passwordEnv;

    @Override
    public Integer call() throws java.io.IOException {
      String password;
      if (passwordEnv != null) {
        password = System.getenv(passwordEnv);
        if (password == null) throw new CommandLine.ParameterException(spec.commandLine(), "--password-env: " + passwordEnv + " is not set");
      } else {
        java.io.Console console = System.console();
        if (console != null) {
          char[] typed = console.readPassword("password for %s: ", username);
          password = typed == null ? null : new String(typed);
        } else {
          password = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8))
              .readLine();
        }
        if (password == null) throw new CommandLine.ParameterException(spec.commandLine(), "no password on stdin");
      }
      io.vertx.core.json.JsonObject body = new io.vertx.core.json.JsonObject().put("username", username).put("password", password)
          .put("role", role).put("team", team).put("environment", environment);
      MeshConfig config = configOptions.load();
      try {
        System.out.println(io.meshplane.app.UserBootstrap.create(config, body).encode());
      } catch (io.meshplane.common.Refusal e) {
        throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
      }
      return 0;
    }
  }

  @Command(name = "migrate", mixinStandardHelpOptions = true, description = "Apply the database migrations and exit.")
  static final class Migrate implements Callable<Integer> {
    @CommandLine.Mixin ConfigOptions configOptions = new ConfigOptions();

    @Override
    public Integer call() {
      try (Database db = Database.open(configOptions.load())) {
        db.migrate();
      }
      return 0;
    }
  }
}
