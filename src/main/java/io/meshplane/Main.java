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
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The command line: {@code run}, {@code migrate}, and the bootstrap commands. */
@Command(name = "meshplane", mixinStandardHelpOptions = true, version = "meshplane 0.1.0",
    description = "Control plane of a private overlay network.",
    subcommands = {Main.Run.class, Main.Migrate.class})
public final class Main {
  static final Logger LOG = LoggerFactory.getLogger(Main.class);
  /** Exit code for a configuration the process refuses to start with. */
  static final int EXIT_CONFIG = 2;
  /** Exit code for a start that failed for another reason (database, cluster, port in use). */
  static final int EXIT_START = 3;

  public static void main(String[] args) {
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
      Meshplane app = Meshplane.start(config, components);
      Runtime.getRuntime().addShutdownHook(new Thread(app::close, "meshplane-shutdown"));
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
